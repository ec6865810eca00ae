/**
 * RFC 9535's match() and search() (sections 2.4.6, 2.4.7), evaluated by a linear-time engine.
 *
 * The engine is re2js, a pure JavaScript port of RE2 (lazy DFA, NFA fallback): time linear in
 * the input, whatever the pattern, where JavaScript's backtracking RegExp took minutes for
 * `(a+)+b` against forty `a`s and `!` (time doubling with each further `a`: 1.2 s at 28).
 * Compared with the other RE2s on npm, measured here on Node 20, per second: evaluations of
 * `match(@, '[a-z]+-[0-9]{4}')` over short strings, and distinct patterns compiled:
 *   re2js 2.10       6.7 M / 12,000; pure JavaScript, no dependency, nothing to build.
 *   re2 1.23 native  850 k / 100,000; each call crosses into C++ and converts the string to
 *                    UTF-8. Built from source at every `npm ci` here (2.5 min): its prebuilt
 *                    binary comes from GitHub, out of reach. Releases after 1.23 need Node 22.
 *   re2-wasm 1.0.2   350 k / 2,400; a compiled pattern is never freed and the WASM heap is
 *                    fixed at 16 MB: the process aborts after ~7,000 distinct patterns.
 *   JavaScript's RegExp, as json-p3 used it: 7.1 M.
 * All four pass the compliance suite's 56 match/search cases.
 *
 * A pattern that is not an I-Regexp, or larger than MAX_PATTERN_SIZE, matches nothing, as RFC
 * 9535 says of an invalid one; so does anything but a string on either side.
 */
import { type FilterFunction, FunctionExpressionType } from 'json-p3';
import { RE2JS } from 're2js';
import { iRegexpToRe2 } from './i-regexp.js';

/**
 * Compiled patterns kept by each function (least recently used dropped first): the distinct
 * patterns of all subscriptions, plus those events bring (`match(@.a, @.pattern)`).
 */
const CACHE_SIZE = 10_000;
/**
 * re2js gives each pattern's DFA 8 MB of states before it starts over, and a pattern like
 * `[ab]*a[ab]{19}` fills them over one long string: 10,000 cached patterns could hold 80 GB.
 * 64 KB each bounds that to 640 MB; a pattern that needs more runs on re2js's NFA instead,
 * just as linear (and over 100,000 characters no slower: 53 ms against 174 ms at 8 MB).
 */
const DFA_MEMORY_BYTES = 64 * 1024;

type Tester = (value: string) => boolean;
const NO_MATCH: Tester = () => false;

abstract class RegexFunction implements FilterFunction {
  readonly argTypes = [FunctionExpressionType.ValueType, FunctionExpressionType.ValueType];
  readonly returnType = FunctionExpressionType.LogicalType;
  /** A Map keeps insertion order: re-inserting on each hit makes its first key the oldest. */
  readonly #testers = new Map<string, Tester>();

  call(value: unknown, pattern: unknown): boolean {
    if (typeof value !== 'string' || typeof pattern !== 'string') return false;
    let tester = this.#testers.get(pattern);
    if (tester === undefined) {
      tester = this.compile(pattern);
      if (this.#testers.size >= CACHE_SIZE) this.#testers.delete(this.#testers.keys().next().value!);
    } else this.#testers.delete(pattern);
    this.#testers.set(pattern, tester);
    return tester(value);
  }

  private compile(pattern: string): Tester {
    const source = iRegexpToRe2(pattern);
    if (source === undefined) return NO_MATCH;
    let compiled: RE2JS;
    try {
      compiled = RE2JS.compile(source);
    } catch {
      // beyond the engine's own limits: a counted repetition over 1,000, {3,2}, a range z-a
      return NO_MATCH;
    }
    const dfa = compiled.re2().dfa;
    dfa.stateBudget = dfa.memBudget = DFA_MEMORY_BYTES;
    return this.tester(compiled);
  }

  protected abstract tester(compiled: RE2JS): Tester;
}

/** match(): the whole string matches the pattern. */
export class IRegexpMatch extends RegexFunction {
  protected tester(compiled: RE2JS): Tester {
    return (value) => compiled.testExact(value);
  }
}

/** search(): some substring matches the pattern. */
export class IRegexpSearch extends RegexFunction {
  protected tester(compiled: RE2JS): Tester {
    return (value) => compiled.test(value);
  }
}
