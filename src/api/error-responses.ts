/**
 * The error answers of a route in its schema, for /openapi.json: one response per status, its
 * `code` an enum of the catalogue's codes of that status the route can answer. The schema also
 * serializes the answer, so it must name every member errorBody() sends (JSONPATH_SYNTAX's
 * `position` too, on the routes that can answer it).
 */
import { ERRORS, type ErrorCode } from '../errors.js';

export interface ErrorResponse {
  description: string;
  type: 'object';
  properties: {
    statusCode: { type: 'integer' };
    error: { type: 'string' };
    code: { type: 'string'; enum: ErrorCode[]; description: string };
    message: { type: 'string' };
    position?: { type: 'integer'; description: string };
  };
  required: ['statusCode', 'error', 'code', 'message'];
}

const POSITION = {
  type: 'integer',
  description:
    'JSONPATH_SYNTAX only: the 0-based offset into the expression where reading stopped, in UTF-16 code units (as JavaScript indexes strings)',
} as const;

/** `describe`: what the status means on this route; the codes are added to it. */
export function errorResponses(codes: readonly ErrorCode[], describe: (status: number) => string): Record<number, ErrorResponse> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of new Set(codes)) {
    const status = ERRORS[code].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return Object.fromEntries(
    [...byStatus].map(([status, ofStatus]) => [
      status,
      {
        description: `${describe(status)}. code: ${ofStatus.join(', ')}`,
        type: 'object',
        properties: {
          statusCode: { type: 'integer' },
          error: { type: 'string' },
          code: { type: 'string', enum: ofStatus, description: 'stable: branch on it, not on the message (docs/errors.md)' },
          message: { type: 'string' },
          ...(ofStatus.includes('JSONPATH_SYNTAX') ? { position: POSITION } : {}),
        },
        required: ['statusCode', 'error', 'code', 'message'],
      } satisfies ErrorResponse,
    ]),
  );
}

/**
 * `added` joined to a route's `existing` error answers: where both have a status, one answer
 * whose `code` takes the codes of both (a route's own 403 beside the cross-site one); an added
 * answer whose codes the route lists already changes nothing.
 */
export function withErrorResponses(
  existing: Record<number, ErrorResponse> | undefined,
  added: Record<number, ErrorResponse>,
): Record<number, ErrorResponse> {
  const joined = { ...existing };
  for (const [status, response] of Object.entries(added)) {
    const mine = joined[Number(status)];
    if (mine === undefined) {
      joined[Number(status)] = response;
      continue;
    }
    const listed = mine.properties.code.enum;
    // Codes the route lists already, with its own words for them, stay as they are.
    if (response.properties.code.enum.every((code) => listed.includes(code))) continue;
    const codes = [...listed, ...response.properties.code.enum.filter((code) => !listed.includes(code))];
    joined[Number(status)] = {
      ...mine,
      description: `${withoutCodes(mine.description)}; or: ${withoutCodes(response.description)}. code: ${codes.join(', ')}`,
      properties: { ...mine.properties, code: { ...mine.properties.code, enum: codes } },
    };
  }
  return joined;
}

const withoutCodes = (description: string) => description.replace(/\. code: [A-Z_, ]+$/, '');
