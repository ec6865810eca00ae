/**
 * Turns JSON-schema validation errors into one message that names the field:
 * `body.target_url: must be a string`, `body: unknown field "colour"`,
 * `querystring.limit: must be an integer from 1 to 1000`.
 */
import type { FastifySchema } from 'fastify';
import type { FastifySchemaValidationError, SchemaErrorDataVar } from 'fastify/types/schema.js';

interface IntegerSchema {
  type?: unknown;
  minimum?: number;
  maximum?: number;
}

export function describeValidationErrors(
  errors: FastifySchemaValidationError[],
  context: SchemaErrorDataVar | undefined,
  schema?: FastifySchema,
): string {
  return errors.map((e) => describeOne(e, context ?? 'body', schema)).join('; ');
}

function describeOne(error: FastifySchemaValidationError, context: string, schema: FastifySchema | undefined): string {
  const path = context + error.instancePath.replace(/\//g, '.');
  const params = error.params as Record<string, unknown>;
  const integer = context === 'querystring' ? queryInteger(schema, error.instancePath.slice(1)) : undefined;
  // Whatever is wrong with an integer parameter (not digits, repeated, out of range), the fix is the same.
  if (integer) return `${path}: must be ${range(integer)}`;
  switch (error.keyword) {
    case 'additionalProperties':
      return `${path}: unknown field "${String(params['additionalProperty'])}"`;
    case 'required':
      return `${path}.${String(params['missingProperty'])}: required`;
    case 'type':
      return `${path}: must be ${article(String(params['type']))}`;
    default:
      return `${path}: ${error.message ?? 'invalid'}`;
  }
}

function queryInteger(schema: FastifySchema | undefined, name: string): IntegerSchema | undefined {
  const querystring = schema?.querystring as { properties?: Record<string, IntegerSchema> } | undefined;
  const property = name === '' ? undefined : querystring?.properties?.[name];
  return property?.type === 'integer' ? property : undefined;
}

function range({ minimum, maximum }: IntegerSchema): string {
  if (minimum !== undefined && maximum !== undefined) return `an integer from ${minimum} to ${maximum}`;
  if (minimum !== undefined) return `an integer of at least ${minimum}`;
  if (maximum !== undefined) return `an integer of at most ${maximum}`;
  return 'an integer';
}

function article(type: string): string {
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`;
}
