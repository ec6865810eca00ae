/**
 * Turns a JSON-schema validation error into the catalogue's error, whose message names the field:
 * `body.target_url: must be a string` (FIELD_TYPE), `body: unknown field "colour"` (FIELD_UNKNOWN),
 * `querystring.limit: must be an integer from 1 to 1000` (QUERY_PARAMETER_INVALID),
 * `body.name: at most 200 characters (found 201)` (FIELD_INVALID).
 */
import type { FastifySchema } from 'fastify';
import type { FastifySchemaValidationError, SchemaErrorDataVar } from 'fastify/types/schema.js';
import { characterCount } from '../characters.js';
import { ServiceError, serviceError } from '../errors.js';

interface IntegerSchema {
  type?: unknown;
  minimum?: number;
  maximum?: number;
}

/**
 * `errors`: Ajv stops at the first (allErrors: false), which is the one answered.
 * `data`: what was validated (the body, the query…), for the sizes a message reports.
 */
export function validationError(
  errors: readonly FastifySchemaValidationError[],
  context: SchemaErrorDataVar | undefined,
  schema?: FastifySchema,
  data?: unknown,
): ServiceError {
  const [first] = errors;
  const where = context ?? 'body';
  if (first === undefined) return serviceError('FIELD_INVALID', where, 'invalid');
  const error = describe(first, where, schema, data);
  // Whatever is wrong in a query string (an unknown parameter too), it is a parameter to fix.
  return where === 'querystring' ? new ServiceError('QUERY_PARAMETER_INVALID', error.message) : error;
}

function describe(error: FastifySchemaValidationError, context: string, schema: FastifySchema | undefined, data: unknown): ServiceError {
  const path = context + error.instancePath.replace(/\//g, '.');
  const params = error.params as Record<string, unknown>;
  const integer = context === 'querystring' ? queryInteger(schema, error.instancePath.slice(1)) : undefined;
  // Whatever is wrong with an integer parameter (not digits, repeated, out of range), the fix is the same.
  if (integer) return serviceError('QUERY_PARAMETER_INVALID', path, `must be ${range(integer)}`);
  switch (error.keyword) {
    case 'additionalProperties':
      return serviceError('FIELD_UNKNOWN', path, String(params.additionalProperty));
    case 'required':
      return serviceError('FIELD_REQUIRED', `${path}.${String(params.missingProperty)}`);
    case 'type':
      return serviceError('FIELD_TYPE', path, article(String(params.type)));
    case 'maxLength': {
      const value = valueAt(data, error.instancePath);
      return serviceError(
        'FIELD_INVALID',
        path,
        `at most ${String(params.limit)} characters${typeof value === 'string' ? ` (found ${characterCount(value)})` : ''}`,
      );
    }
    case 'minimum':
      return serviceError('FIELD_INVALID', path, `must be at least ${String(params.limit)}`);
    case 'maximum':
      return serviceError('FIELD_INVALID', path, `must be at most ${String(params.limit)}`);
    case 'maxProperties': {
      const value = valueAt(data, error.instancePath);
      const found = typeof value === 'object' && value !== null ? ` (found ${Object.keys(value).length})` : '';
      return serviceError('FIELD_INVALID', path, `at most ${String(params.limit)} entries${found}`);
    }
    default:
      return serviceError('FIELD_INVALID', path, error.message ?? 'invalid');
  }
}

/** The member of `data` at a JSON Pointer such as `/auth/basic/username`. */
function valueAt(data: unknown, pointer: string): unknown {
  let value = data;
  for (const token of pointer.split('/').slice(1)) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Record<string, unknown>)[token.replace(/~1/g, '/').replace(/~0/g, '~')];
  }
  return value;
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

/** `integer` is "an integer"; a list of types (`integer,null`) is "an integer or null". */
function article(type: string): string {
  return type
    .split(',')
    .map((one) => (one === 'null' ? one : /^[aeiou]/.test(one) ? `an ${one}` : `a ${one}`))
    .join(' or ');
}
