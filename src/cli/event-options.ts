/** Arguments and output pacing shared by the event-log subcommands. */
import { parseCliDate } from '../time/clock.js';
import { canonicalUuid } from '../uuid.js';

export interface ParsedArguments {
  uuids: string[];
  values: Map<string, string>;
  flags: Set<string>;
}

export const DAY_US = 24 * 3600 * 1_000_000;

/**
 * Splits uuids from `--option value` / `--option=value` and flags; returns a message naming
 * the first thing wrong. Uuids are lowercased (the log stores them so) and de-duplicated.
 */
export function parseArguments(
  command: string,
  args: readonly string[],
  known: { values: readonly string[]; flags: readonly string[] },
): ParsedArguments | string {
  const parsed: ParsedArguments = { uuids: [], values: new Map(), flags: new Set() };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg.startsWith('-')) {
      const eq = arg.indexOf('=');
      const name = eq > 0 ? arg.slice(0, eq) : arg;
      if (known.flags.includes(name) && eq < 0) {
        parsed.flags.add(name);
        continue;
      }
      if (!known.values.includes(name)) return `${command}: unknown option ${arg}`;
      if (parsed.values.has(name)) return `${command}: ${name} is given twice`;
      const value = eq > 0 ? arg.slice(eq + 1) : args[++i];
      if (value === undefined) return `${command}: ${name} needs a value`;
      parsed.values.set(name, value);
    } else if (canonicalUuid(arg) !== undefined) {
      const uuid = canonicalUuid(arg)!;
      if (!parsed.uuids.includes(uuid)) parsed.uuids.push(uuid);
    } else {
      return `${command}: not an event uuid: ${arg}`;
    }
  }
  return parsed;
}

/** A non-negative integer, or a message. */
export function parseLimit(command: string, text: string): number | string {
  const limit = /^\d+$/.test(text) ? Number(text) : NaN;
  return Number.isSafeInteger(limit) ? limit : `${command}: --limit must be a non-negative integer, not ${JSON.stringify(text)}`;
}

/** A `YYYY-MM-DD HH:MM:SS` UTC date in µs, or a message. */
export function parseDate(command: string, option: string, text: string): number | string {
  return parseCliDate(text) ?? `${command}: ${option} must be a date 'YYYY-MM-DD HH:MM:SS' (UTC), not ${JSON.stringify(text)}`;
}

/**
 * Resolves once stdout has taken everything written so far: waiting after each page keeps a
 * slow reader (`| less`) from making the whole log pile up in memory.
 */
export function stdoutFlushed(): Promise<void> {
  return new Promise((resolve) => process.stdout.write('', () => resolve()));
}
