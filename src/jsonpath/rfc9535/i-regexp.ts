/**
 * I-Regexp (RFC 9485) read and written out in RE2 syntax, for a linear-time engine.
 *
 * The pattern is checked against the RFC's grammar (section 3) in one pass without recursion,
 * so a pattern taken from an event, however long or deeply nested, costs time linear in its
 * length here. What comes out:
 * - `.` is `[^\n\r]` (section 5.3: any character but newline and carriage return).
 * - Every literal character but ASCII letters and digits, inside a class or not, is written
 *   `\x{hex}`: nothing in it can mean anything else to RE2.
 * - `(…)` is `(?:…)`: nothing is captured.
 * - `\p{Lu}`, `\P{Nd}`…: the categories the grammar names, unchanged (RE2 knows them all).
 * - `^` and `$` outside a class anchor at the start and end of the string. The grammar counts
 *   them as ordinary characters, but the RFC's own mapping to ECMAScript (section 5.3) leaves
 *   them as anchors, and so does the RFC 9535 compliance suite ("match, explicit caret").
 * Neither end is anchored otherwise: match() has the engine test the whole string, search() any
 * part of it.
 */

/** `{n}`, `{n,}` or `{n,m}` at the sticky position (QuantExact is digits only). */
const RANGE_QUANTIFIER = /\{([0-9]+)(?:,([0-9]*))?\}/y;
/** `{Lu}` after `\p` or `\P`: IsCategory of the grammar (Cs is not one). */
const CATEGORY = /\{(L[lmotu]?|M[cen]?|N[dlo]?|P[c-fios]?|Z[lps]?|S[ckmo]?|C[cfno]?)\}/y;
/** SingleCharEsc: what may follow `\` to stand for the character itself. */
const SINGLE_CHAR_ESCAPES: ReadonlyMap<string, number> = new Map([
  ...[...'()*+-.?[\\]^{|}'].map((ch): [string, number] => [ch, ch.codePointAt(0)!]),
  ['n', 0x0a],
  ['r', 0x0d],
  ['t', 0x09],
]);
/** Characters that are syntax outside a class, so not NormalChar. */
const NOT_NORMAL = new Set('()*+.?[\\]{|}');
const ANY_BUT_NEWLINES = '[^\\n\\r]';

/**
 * The largest pattern accepted, in atoms (characters, classes, `.`, groups) once counted
 * repetitions are written out as the engine does: `[0-9]{4}` is 4, `(ab){3}` is 9. A linear-time
 * engine still spends up to this much per input character: `(a|aa){333}` (1,332) takes 70 ms
 * over 100,000 characters, `(a|aa){1000}` ten times over (40,000) 2 s over 10,000. 2,048 admits
 * every pattern that fits in an expression (MAX_EXPRESSION_LENGTH) without counted repetition.
 */
export const MAX_PATTERN_SIZE = 2_048;

/**
 * `pattern` in RE2 syntax, unanchored; undefined when it is not an I-Regexp, or is larger than
 * MAX_PATTERN_SIZE.
 */
export function iRegexpToRe2(pattern: string): string | undefined {
  const out: string[] = [];
  // the size so far, and where each open group started
  let size = 0;
  const groupStarts: number[] = [];
  // the size of the piece just read when a quantifier may follow it, else 0
  let last = 0;
  let i = 0;
  while (i < pattern.length) {
    if (size > MAX_PATTERN_SIZE) return undefined;
    const cp = pattern.codePointAt(i)!;
    const ch = String.fromCodePoint(cp);
    i += ch.length;
    if (ch === '(') {
      groupStarts.push(size++);
      out.push('(?:');
      last = 0;
    } else if (ch === ')') {
      const start = groupStarts.pop();
      if (start === undefined) return undefined;
      out.push(')');
      last = size - start;
    } else if (ch === '|') {
      out.push('|');
      last = 0;
    } else if (ch === '*' || ch === '+' || ch === '?') {
      if (last === 0) return undefined;
      out.push(ch);
      last = 0;
    } else if (ch === '{') {
      if (last === 0) return undefined;
      RANGE_QUANTIFIER.lastIndex = i - 1;
      const range = RANGE_QUANTIFIER.exec(pattern);
      if (!range) return undefined;
      out.push(range[0]);
      i = RANGE_QUANTIFIER.lastIndex;
      // {n,m} is written out as max(n, m) copies of the piece, read once already
      const copies = Math.max(1, Number(range[1]), Number(range[2] || 0));
      size += last * (copies - 1);
      last = 0;
    } else {
      // an atom of size 1
      if (ch === '.') out.push(ANY_BUT_NEWLINES);
      else if (ch === '^' || ch === '$') out.push(ch);
      else if (ch === '[' || ch === '\\') {
        const end = ch === '[' ? readClass(pattern, i, out) : readEscape(pattern, i, out);
        if (end === undefined) return undefined;
        i = end;
      } else if (NOT_NORMAL.has(ch) || isSurrogate(cp)) return undefined;
      else out.push(literal(cp));
      size++;
      last = 1;
    }
  }
  return groupStarts.length === 0 && size <= MAX_PATTERN_SIZE ? out.join('') : undefined;
}

/**
 * After `\` at `start`: a SingleCharEsc or a category escape, written to `out`. Returns where
 * reading stopped, or undefined when it is neither.
 */
function readEscape(pattern: string, start: number, out: string[]): number | undefined {
  const ch = pattern[start];
  if (ch === 'p' || ch === 'P') {
    CATEGORY.lastIndex = start + 1;
    const category = CATEGORY.exec(pattern);
    if (!category) return undefined;
    out.push(`\\${ch}{${category[1]!}}`);
    return CATEGORY.lastIndex;
  }
  const cp = ch === undefined ? undefined : SINGLE_CHAR_ESCAPES.get(ch);
  if (cp === undefined) return undefined;
  out.push(literal(cp));
  return start + 1;
}

/**
 * A charClassExpr whose `[` is just before `start`:
 * `"[" ["^"] ("-" / CCE1) *CCE1 ["-"] "]"`, CCE1 being a character, a range or a category
 * escape. Returns where reading stopped (after `]`), or undefined when it is none.
 */
function readClass(pattern: string, start: number, out: string[]): number | undefined {
  let i = start;
  out.push('[');
  if (pattern[i] === '^') {
    out.push('^');
    i++;
  }
  let items = 0;
  if (pattern[i] === '-') {
    out.push(literal(0x2d));
    i++;
    items++;
  }
  for (;;) {
    const ch = pattern[i];
    if (ch === undefined) return undefined;
    if (ch === ']') {
      if (items === 0) return undefined;
      out.push(']');
      return i + 1;
    }
    if (ch === '-') {
      // only last, just before `]`
      if (pattern[i + 1] !== ']') return undefined;
      out.push(literal(0x2d));
      i++;
    } else if (ch === '\\' && (pattern[i + 1] === 'p' || pattern[i + 1] === 'P')) {
      const end = readEscape(pattern, i + 1, out);
      if (end === undefined) return undefined;
      i = end;
    } else {
      const low = readClassChar(pattern, i);
      if (low === undefined) return undefined;
      i = low.end;
      if (pattern[i] === '-' && pattern[i + 1] !== ']') {
        const high = readClassChar(pattern, i + 1);
        if (high === undefined) return undefined;
        i = high.end;
        out.push(`${literal(low.cp)}-${literal(high.cp)}`);
      } else out.push(literal(low.cp));
    }
    items++;
  }
}

/** CCchar at `start`: any character but `-`, `[`, `\`, `]`, or a SingleCharEsc. */
function readClassChar(pattern: string, start: number): { cp: number; end: number } | undefined {
  const cp = pattern.codePointAt(start);
  if (cp === undefined || isSurrogate(cp)) return undefined;
  if (cp === 0x5c) {
    const escaped = SINGLE_CHAR_ESCAPES.get(pattern[start + 1] ?? '');
    return escaped === undefined ? undefined : { cp: escaped, end: start + 2 };
  }
  if (cp === 0x2d || cp === 0x5b || cp === 0x5d) return undefined;
  return { cp, end: start + (cp > 0xffff ? 2 : 1) };
}

function isSurrogate(cp: number): boolean {
  return cp >= 0xd800 && cp <= 0xdfff;
}

/** Letters and digits as they are (readable, and no different to RE2); anything else as `\x{hex}`. */
function literal(cp: number): string {
  const ch = String.fromCodePoint(cp);
  return /^[A-Za-z0-9]$/.test(ch) ? ch : `\\x{${cp.toString(16)}}`;
}
