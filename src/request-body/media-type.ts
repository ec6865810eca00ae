/**
 * Content-Type headers: what the HTTP binding needs to pick a mode and to read a body.
 */
import { serviceError } from '../errors.js';

export interface MediaType {
  /** `type/subtype`, lower-cased; '' when the header is absent or empty. */
  essence: string;
  /** Parameter names lower-cased, values unquoted. */
  parameters: Record<string, string>;
}

const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const QUOTED_STRING = '"(?:[^"\\\\\\x00-\\x1f\\x7f]|\\\\[\\x20-\\x7e\\t])*"';
const PARAMETER = `[ \\t]*;[ \\t]*${TOKEN}=(?:${TOKEN}|${QUOTED_STRING})`;
/** RFC 2046 / RFC 9110 `media-type`: what `datacontenttype` must hold. */
const MEDIA_TYPE = new RegExp(`^${TOKEN}/${TOKEN}(?:${PARAMETER})*[ \\t]*$`);

export function isMediaType(value: string): boolean {
  return MEDIA_TYPE.test(value);
}

export function parseMediaType(header: string | undefined): MediaType {
  const [essence = '', ...rest] = splitParameters(header ?? '');
  const parameters: Record<string, string> = {};
  for (const part of rest) {
    const equals = part.indexOf('=');
    if (equals <= 0) continue;
    const name = part.slice(0, equals).trim().toLowerCase();
    let value = part.slice(equals + 1).trim();
    if (value.startsWith('"') && value.endsWith('"') && value.length >= 2) value = value.slice(1, -1).replace(/\\(.)/g, '$1');
    parameters[name] = value;
  }
  return { essence: essence.trim().toLowerCase(), parameters };
}

// Splits at semicolons outside quoted strings, so `charset="a;b"` stays one parameter.
function splitParameters(header: string): string[] {
  const parts: string[] = [];
  let current = '';
  let quoted = false;
  for (let i = 0; i < header.length; i++) {
    const char = header[i] as string;
    if (quoted && char === '\\') {
      current += char + (header[i + 1] ?? '');
      i++;
    } else if (char === '"') {
      quoted = !quoted;
      current += char;
    } else if (char === ';' && !quoted) {
      parts.push(current);
      current = '';
    } else {
      current += char;
    }
  }
  parts.push(current);
  return parts;
}

/** JSON event format 3.1.1: a media type whose subtype is `json` or ends in `+json`. */
export function isJsonMediaType(type: MediaType): boolean {
  const subtype = type.essence.slice(type.essence.indexOf('/') + 1);
  return type.essence.includes('/') && (subtype === 'json' || subtype.endsWith('+json'));
}

const UTF8_NAMES = new Set(['utf-8', 'utf8']);

/** True when the body is declared UTF-8, or nothing is declared (JSON is UTF-8 by RFC 8259). */
export function declaresUtf8OrNothing(type: MediaType): boolean {
  const charset = type.parameters.charset;
  return charset === undefined || UTF8_NAMES.has(charset.toLowerCase());
}

/** RFC 8259 8.1: JSON exchanged between systems is UTF-8; another charset is a representation we do not read. */
export function requireUtf8Json(type: MediaType): void {
  if (!declaresUtf8OrNothing(type)) {
    throw serviceError(
      'MEDIA_TYPE_UNSUPPORTED',
      'content-type',
      `charset "${type.parameters.charset}" is not supported for JSON: send UTF-8 (charset=utf-8)`,
    );
  }
}
