/**
 * A field's value checked against its request schema (fields.ts) where no route has checked it:
 * what the importer reads from the original service's database. The first error is told in the
 * words a request's would be (request-body/validation-messages.ts), e.g. `body.auth.basic.username: at
 * most 1024 characters (found 2000)`.
 */
import type { FastifySchemaValidationError, SchemaErrorDataVar } from 'fastify/types/schema.js';
import { Value } from 'typebox/value';
import { validationError } from '../request-body/validation-messages.js';
import { type SubscriptionWrite, SUBSCRIPTION_FIELDS, type WritableField } from './fields.js';

/** `value`, typed as its schema describes it; a 400 ServiceError naming `body.<field>` otherwise. */
export function checkedField<F extends WritableField>(field: F, value: unknown): NonNullable<SubscriptionWrite[F]> | null {
  // TypeBox also reports each member that `additionalProperties: false` refuses as `boolean` (its subschema, false).
  const first = Value.Errors(SUBSCRIPTION_FIELDS[field].write, value).find((error) => error.keyword !== 'boolean');
  if (first === undefined) return value as NonNullable<SubscriptionWrite[F]> | null;
  const params = first.params as Record<string, unknown>;
  const asAjv: FastifySchemaValidationError = {
    keyword: first.keyword,
    instancePath: first.instancePath,
    schemaPath: first.schemaPath,
    message: first.message,
    // Ajv names one member where TypeBox lists them.
    params: {
      ...params,
      additionalProperty: (params.additionalProperties as string[] | undefined)?.[0],
      missingProperty: (params.requiredProperties as string[] | undefined)?.[0],
    },
  };
  throw validationError([asAjv], `body.${field}` as SchemaErrorDataVar, undefined, value);
}
