/**
 * The CloudEvents type system's string encodings (spec 1.0 "Type System"), as predicates. They
 * decide, never normalise: a value that passes is kept exactly as sent.
 */

// CloudEvents String: no C0/C1 controls, no noncharacters; with the `u` flag `\p{Cs}` only
// matches a surrogate that is not part of a pair, which is exactly what the spec forbids.
const NOT_IN_STRING = /[\p{Cc}\p{Cs}\p{Noncharacter_Code_Point}]/u;

export function isCloudEventsString(value: string): boolean {
  return !NOT_IN_STRING.test(value);
}

const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;

export function isInt32(value: number): boolean {
  return Number.isInteger(value) && value >= INT32_MIN && value <= INT32_MAX;
}

// RFC 4648 section 4, padded, without line breaks.
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export function isBase64(value: string): boolean {
  return BASE64.test(value);
}

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:[Zz]|[+-](\d{2}):(\d{2}))$/;

/** RFC 3339 `date-time` (section 5.6), with the calendar checked: no 2023-02-29, no 24:00. */
export function isRfc3339(value: string): boolean {
  const match = RFC3339.exec(value);
  if (match === null) return false;
  const part = (group: number) => Number(match[group] ?? 0);
  const [year, month, day] = [part(1), part(2), part(3)];
  if (month < 1 || month > 12) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1] ?? 0;
  if (day < 1 || day > days) return false;
  // Second 60 is a leap second, which RFC 3339 allows.
  return part(4) <= 23 && part(5) <= 59 && part(6) <= 60 && part(7) <= 23 && part(8) <= 59;
}

// RFC 3986 building blocks.
const PCT = '%[0-9A-Fa-f]{2}';
const UNRESERVED_SUB_DELIMS = "A-Za-z0-9\\-._~!$&'()*+,;=";
const PCHAR = `(?:[${UNRESERVED_SUB_DELIMS}:@]|${PCT})`;
const QUERY_OR_FRAGMENT = new RegExp(`^(?:${PCHAR}|[/?])*$`);
const PATH = new RegExp(`^(?:${PCHAR}|/)*$`);
const SCHEME = /^([A-Za-z][A-Za-z0-9+.-]*):/;
const USERINFO = new RegExp(`^(?:[${UNRESERVED_SUB_DELIMS}:]|${PCT})*$`);
const REG_NAME = new RegExp(`^(?:[${UNRESERVED_SUB_DELIMS}]|${PCT})*$`);
const IP_LITERAL = new RegExp(`^\\[(?:[0-9A-Fa-f:.]+|v[0-9A-Fa-f]+\\.[${UNRESERVED_SUB_DELIMS}:]+)\\]$`);
const PORT = /^[0-9]*$/;

/** RFC 3986 `URI-reference` (section 4.1): an absolute URI or a relative reference. */
export function isUriReference(value: string): boolean {
  return parseUriReference(value) !== null;
}

/**
 * CloudEvents `URI` (`dataschema`): a URI-reference with a scheme. A fragment is allowed, as
 * schema links such as `https://example.org/schema.json#/definitions/ingest` are common.
 */
export function isAbsoluteUri(value: string): boolean {
  return parseUriReference(value)?.hasScheme === true;
}

function parseUriReference(value: string): { hasScheme: boolean } | null {
  let rest = value;
  const hash = rest.indexOf('#');
  if (hash >= 0) {
    if (!QUERY_OR_FRAGMENT.test(rest.slice(hash + 1))) return null;
    rest = rest.slice(0, hash);
  }
  const question = rest.indexOf('?');
  if (question >= 0) {
    if (!QUERY_OR_FRAGMENT.test(rest.slice(question + 1))) return null;
    rest = rest.slice(0, question);
  }
  const scheme = SCHEME.exec(rest);
  if (scheme !== null) rest = rest.slice(scheme[0].length);
  if (rest.startsWith('//')) {
    const slash = rest.indexOf('/', 2);
    const authority = slash < 0 ? rest.slice(2) : rest.slice(2, slash);
    if (!isAuthority(authority)) return null;
    rest = slash < 0 ? '' : rest.slice(slash);
  } else if (scheme === null && (rest.split('/')[0] ?? '').includes(':')) {
    // path-noscheme: without a scheme, a colon in the first segment would read as one.
    return null;
  }
  return PATH.test(rest) ? { hasScheme: scheme !== null } : null;
}

function isAuthority(authority: string): boolean {
  const at = authority.lastIndexOf('@');
  if (at >= 0 && !USERINFO.test(authority.slice(0, at))) return false;
  const hostPort = authority.slice(at + 1);
  let host = hostPort;
  let port = '';
  if (hostPort.startsWith('[')) {
    const close = hostPort.indexOf(']');
    if (close < 0) return false;
    host = hostPort.slice(0, close + 1);
    const after = hostPort.slice(close + 1);
    if (after !== '' && !after.startsWith(':')) return false;
    port = after.slice(1);
    if (!IP_LITERAL.test(host)) return false;
  } else {
    const colon = hostPort.lastIndexOf(':');
    if (colon >= 0) {
      host = hostPort.slice(0, colon);
      port = hostPort.slice(colon + 1);
    }
    if (!REG_NAME.test(host)) return false;
  }
  return PORT.test(port);
}
