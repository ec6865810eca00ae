import type { Location } from './types.js';

/** RFC 9535 section 2.7: `$['name'][0]`, names in single quotes with the prescribed escapes. */
export function normalizedPath(location: Location): string {
  let out = '$';
  for (const part of location) {
    out += typeof part === 'number' ? `[${part}]` : `['${escapeName(part)}']`;
  }
  return out;
}

function escapeName(name: string): string {
  let out = '';
  for (const ch of name) {
    const code = ch.codePointAt(0)!;
    if (ch === '\\') out += '\\\\';
    else if (ch === "'") out += "\\'";
    else if (code === 0x08) out += '\\b';
    else if (code === 0x0c) out += '\\f';
    else if (code === 0x0a) out += '\\n';
    else if (code === 0x0d) out += '\\r';
    else if (code === 0x09) out += '\\t';
    else if (code < 0x20) out += `\\u${code.toString(16).padStart(4, '0')}`;
    else out += ch;
  }
  return out;
}
