/**
 * Turns JSON-schema validation errors into one message that names the field:
 * `body.target_url: must be a string`, `body: unknown field "colour"`,
 * `querystring.limit: must be an integer from 1 to 1000`, `body.name: at most 200 characters (found 201)`.
 */
import type { FastifySchema } from 'fastify';
import type { FastifySchemaValidationError, SchemaErrorDataVar } from 'fastify/types/schema.js';
import { characterCount } from '../characters.js';

interface IntegerSchema {
  type?: unknown;
  minimum?: number;
  maximum?: number;
}

/** `data`: what was validated (the body, the query…), for the sizes a message reports. */
export function describeValidationErrors(
  errors: FastifySchemaValidationError[],
  context: SchemaErrorDataVar | undefined,
  schema?: FastifySchema,
  data?: unknown,
): string {
  return errors.map((e) => describeOne(e, context ?? 'body', schema, data)).join('; ');
}

function describeOne(error: FastifySchemaValidationError, context: string, schema: FastifySchema | undefined, data: unknown): string {
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
    case 'maxLength': {
      const value = valueAt(data, error.instancePath);
      return `${path}: at most ${String(params['limit'])} characters${typeof value === 'string' ? ` (found ${characterCount(value)})` : ''}`;
    }
    case 'maxProperties': {
      const value = valueAt(data, error.instancePath);
      const found = typeof value === 'object' && value !== null ? ` (found ${Object.keys(value).length})` : '';
      return `${path}: at most ${String(params['limit'])} entries${found}`;
    }
    default:
      return `${path}: ${error.message ?? 'invalid'}`;
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

function article(type: string): string {
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`;
}
