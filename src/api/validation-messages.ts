/**
 * Turns JSON-schema validation errors into one message that names the field:
 * `body.target_url: must be a string`, `body: unknown field "colour"`.
 */
import type { FastifySchemaValidationError, SchemaErrorDataVar } from 'fastify/types/schema.js';

export function describeValidationErrors(errors: FastifySchemaValidationError[], context: SchemaErrorDataVar | undefined): string {
  return errors.map((e) => describeOne(e, context ?? 'body')).join('; ');
}

function describeOne(error: FastifySchemaValidationError, context: string): string {
  const path = context + error.instancePath.replace(/\//g, '.');
  const params = error.params as Record<string, unknown>;
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

function article(type: string): string {
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`;
}
