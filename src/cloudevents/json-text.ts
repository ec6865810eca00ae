/**
 * Where the values of a JSON text are, so that a member can be kept as the producer wrote it
 * (`12345678901234567890` and `1.50` survive; JSON.parse and JSON.stringify would not keep them).
 * Only for text JSON.parse has already accepted: nothing is validated here (bounds are checked
 * only so that a misuse ends rather than loops).
 */
import type { JsonObject } from '../json.js';

/** A value's place in the text: `text.slice(start, end)` is its source text. */
export interface Span {
  start: number;
  end: number;
}

export interface Member extends Span {
  /** The member name, escapes decoded (`"d\u0061ta"` is `data`). */
  name: string;
}

export interface ObjectSpan extends Span {
  /** In the order written; a name written twice appears twice (JSON.parse keeps the last). */
  members: Member[];
}

const WHITESPACE = new Set([' ', '\t', '\n', '\r']);

export function skipWhitespace(text: string, from: number): number {
  let i = from;
  while (i < text.length && WHITESPACE.has(text[i] as string)) i++;
  return i;
}

/** The span of the value starting at `from` (whitespace before it skipped). */
export function valueSpan(text: string, from = 0): Span {
  const start = skipWhitespace(text, from);
  return { start, end: valueEnd(text, start) };
}

/** The members of the object starting at `from`. */
export function objectSpan(text: string, from = 0): ObjectSpan {
  const start = skipWhitespace(text, from);
  if (text[start] !== '{') throw new TypeError(`objectSpan: no object at ${start}`);
  const members: Member[] = [];
  let i = skipWhitespace(text, start + 1);
  while (i < text.length && text[i] !== '}') {
    const nameEnd = stringEnd(text, i);
    const name = JSON.parse(text.slice(i, nameEnd)) as string;
    const value = valueSpan(text, skipWhitespace(text, nameEnd) + 1);
    members.push({ name, ...value });
    i = skipWhitespace(text, value.end);
    if (text[i] === ',') i = skipWhitespace(text, i + 1);
  }
  return { start, end: i + 1, members };
}

/** The elements of the array starting at `from`. */
export function arrayElements(text: string, from = 0): Span[] {
  const start = skipWhitespace(text, from);
  if (text[start] !== '[') throw new TypeError(`arrayElements: no array at ${start}`);
  const elements: Span[] = [];
  let i = skipWhitespace(text, start + 1);
  while (i < text.length && text[i] !== ']') {
    const element = valueSpan(text, i);
    elements.push(element);
    i = skipWhitespace(text, element.end);
    if (text[i] === ',') i = skipWhitespace(text, i + 1);
  }
  return elements;
}

function valueEnd(text: string, start: number): number {
  const first = text[start];
  if (first === '"') return stringEnd(text, start);
  if (first === '{' || first === '[') return containerEnd(text, start);
  // A number, true, false or null: it runs to the next delimiter.
  let i = start;
  while (i < text.length && !WHITESPACE.has(text[i] as string) && !',]}'.includes(text[i] as string)) i++;
  return i;
}

/** `start` is at the opening quote; the index after the closing one. */
function stringEnd(text: string, start: number): number {
  let i = start + 1;
  while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
  return i + 1;
}

/** `start` is at `{` or `[`; the index after the bracket that closes it (strings skipped whole). */
function containerEnd(text: string, start: number): number {
  let depth = 0;
  let i = start;
  do {
    const char = text[i];
    if (char === '"') {
      i = stringEnd(text, i);
      continue;
    }
    if (char === '{' || char === '[') depth++;
    else if (char === '}' || char === ']') depth--;
    i++;
  } while (depth > 0 && i < text.length);
  return i;
}

/** `JSON.stringify(object)`, except that the members named in `sourceTexts` are written as given there. */
export function objectText(object: JsonObject, sourceTexts: ReadonlyMap<string, string>): string {
  const members = Object.keys(object).map((name) => `${JSON.stringify(name)}:${sourceTexts.get(name) ?? JSON.stringify(object[name])}`);
  return `{${members.join(',')}}`;
}

/** The text on one line: whitespace between tokens dropped, every value as written. */
export function compactText(text: string): string {
  let out = '';
  let from = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') {
      inString = true;
    } else if (WHITESPACE.has(c)) {
      out += text.slice(from, i);
      from = i + 1;
    }
  }
  return out + text.slice(from);
}
