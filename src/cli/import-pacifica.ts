import { schemaStatus } from '../db/migrate.js';
import { addressGuard } from '../net/address-guard.js';
import { runImport } from '../pacifica/import-run.js';
import { NotTheOriginal, openOriginal } from '../pacifica/original-database.js';
import { readSourceUrl, type SourceLocation } from '../pacifica/source-url.js';
import { SourceUnreachable } from '../pacifica/sql-driver.js';
import { leftOut, summaryLines } from '../pacifica/summary.js';
import { TARGET_LOOKUP_TIMEOUT_MS } from '../subscriptions/service.js';
import { systemClock } from '../time/clock.js';
import { UnknownTimeZone, type ZonedTimes, zonedTimes } from '../time/zoned-time.js';
import { type Command, EXIT } from './command.js';
import { stdoutFlushed } from './event-options.js';

const NAME = 'import-pacifica';

interface ImportArguments {
  source: SourceLocation;
  times: ZonedTimes;
  subscriptionsOnly: boolean;
  since: string | undefined;
}

const VALUES = ['--from', '--timezone', '--since'];
const FLAGS = ['--subscriptions-only'];

/** The arguments, or a message naming the first thing wrong. */
function parse(args: readonly string[], env: NodeJS.ProcessEnv): ImportArguments | string {
  const values = new Map<string, string>();
  const flags = new Set<string>();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const eq = arg.indexOf('=');
    const name = eq > 0 ? arg.slice(0, eq) : arg;
    if (FLAGS.includes(arg)) flags.add(arg);
    else if (VALUES.includes(name)) {
      if (values.has(name)) return `${NAME}: ${name} is given twice`;
      const value = eq > 0 ? arg.slice(eq + 1) : args[++i];
      if (value === undefined) return `${NAME}: ${name} needs a value`;
      values.set(name, value);
    } else return `${NAME}: unknown ${arg.startsWith('-') ? 'option' : 'argument'} ${arg}`;
  }
  const from = values.get('--from');
  if (from === undefined)
    return `${NAME}: --from is required: the original's peewee_url, e.g. postgres://user:password@host:5432/pacifica_notifications`;
  const source = readSourceUrl(from);
  if (typeof source === 'string') return `${NAME}: ${source}`;
  const zone = values.get('--timezone') ?? zoneOfEnvironment(env.TZ) ?? 'UTC';
  let times: ZonedTimes;
  try {
    times = zonedTimes(zone);
  } catch (error) {
    if (!(error instanceof UnknownTimeZone)) throw error;
    return `${NAME}: ${values.has('--timezone') ? '--timezone' : 'TZ'}: ${error.message}`;
  }
  const since = values.get('--since');
  if (since !== undefined && (!/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/.test(since) || times.micros(since) === undefined))
    return `${NAME}: --since must be a date 'YYYY-MM-DD HH:MM:SS' (the original's local time), not ${JSON.stringify(since)}`;
  return { source, times, subscriptionsOnly: flags.has('--subscriptions-only'), since };
}

/** TZ as Node reads it: `:Europe/Berlin` and a path into the zone database name a zone too. */
function zoneOfEnvironment(tz: string | undefined): string | undefined {
  if (tz === undefined || tz.trim() === '') return undefined;
  const name = tz.replace(/^:/, '');
  return /\/zoneinfo\/(.+)$/.exec(name)?.[1] ?? name;
}

export const importPacifica: Command = {
  name: NAME,
  usage: `${NAME} --from URL [--timezone ZONE] [--subscriptions-only] [--since 'YYYY-MM-DD HH:MM:SS']`,
  summary:
    "bring the subscriptions and event log of the original service (pacifica-notifications, schema 3.0; 2.0: subscriptions only) into this service's database, which must be current (dbsync). " +
    "URL: the original's peewee_url (postgres://, postgresql://, mysql:// or sqlite:///path). Subscriptions keep their uuid, user, times and state (deleted ones stay deleted); " +
    'their expressions are read in the original dialect (jsonpath2); one that no longer compiles, or a target the address guard refuses, comes over disabled, saying why. ' +
    "The log comes over as history: nothing is delivered again. Times are the original host's local times, read in --timezone (an IANA name; default: TZ, else UTC); " +
    '--since (in that zone) leaves out older events. Safe to repeat and to interrupt: rows already here are compared, never written twice. ' +
    'Exit 0: done; 1: a conflict or an unreadable row (listed), or the source is unreachable; 2: bad arguments, or not a database of the original; 130: interrupted',
  check: (args) => {
    const parsed = parse(args, process.env);
    return typeof parsed === 'string' ? parsed : undefined;
  },
  async run({ args, config, database, out, err }) {
    const parsed = parse(args, process.env);
    if (typeof parsed === 'string') throw new Error(parsed);
    const status = await schemaStatus(database);
    if (status.pending.length > 0) {
      err(`${NAME}: the schema of ${database.description} is out of date: run \`svc-notifications-cmd dbsync\` first`);
      return EXIT.failure;
    }
    const started = performance.now();
    let original;
    try {
      original = await openOriginal(parsed.source);
    } catch (error) {
      if (error instanceof SourceUnreachable) {
        err(`${NAME}: ${error.message}`);
        return EXIT.failure;
      }
      if (error instanceof NotTheOriginal) {
        err(`${NAME}: ${parsed.source.description}: ${error.message}`);
        return EXIT.usage;
      }
      throw error;
    }
    const stop = interruptible(err);
    const progress = progressLine(process.stderr);
    const guard = addressGuard({ allow: config.targetAllow, deny: config.targetDeny });
    const refusals = new Map<string, Promise<string | null>>();
    try {
      const report = await runImport({
        original,
        database,
        times: parsed.times,
        keyring: config.secretKey,
        hostRefusal: (host) => {
          let refusal = refusals.get(host);
          if (refusal === undefined) refusals.set(host, (refusal = guard.hostRefusal(host, TARGET_LOOKUP_TIMEOUT_MS)));
          return refusal;
        },
        clock: systemClock(),
        subscriptionsOnly: parsed.subscriptionsOnly,
        since: parsed.since,
        userSubscriptions: config.userSubscriptions,
        retentionMs: config.retentionMs,
        signal: stop.signal,
        progress: progress.show,
      });
      progress.end();
      const lines = summaryLines(report, {
        from: parsed.source.description,
        to: database.description,
        zone: parsed.times.zone,
        seconds: (performance.now() - started) / 1000,
        peakBytes: process.resourceUsage().maxRSS * 1024,
        userLimit: config.userSubscriptions,
        retention: config.retentionMs === 'off' ? 'off' : describeDuration(config.retentionMs),
      });
      for (const line of lines) out(line);
      await stdoutFlushed();
      if (report.interrupted) return EXIT.interrupted;
      return leftOut(report) ? EXIT.failure : EXIT.ok;
    } finally {
      progress.end();
      stop.release();
      await original.close().catch(() => undefined);
    }
  },
};

/**
 * The first Ctrl-C (or SIGTERM) ends the run after the page being written, with its summary;
 * a second one ends the process at once (the page in flight is rolled back).
 */
function interruptible(err: (line: string) => void): { signal: AbortSignal; release(): void } {
  const controller = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => {
    if (controller.signal.aborted) process.exit(EXIT.interrupted);
    err(`${NAME}: ${signal}: stopping after the page being written (again to stop at once)`);
    controller.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    signal: controller.signal,
    release: () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}

/** On a terminal, one line rewritten in place at most a few times a second: rows done of the total, and the rate. */
function progressLine(stream: NodeJS.WriteStream): { show(done: number, total: number): void; end(): void } {
  if (!stream.isTTY) return { show: () => undefined, end: () => undefined };
  const started = performance.now();
  let shownAt = 0;
  let shown = false;
  return {
    show(done, total) {
      const now = performance.now();
      if (now - shownAt < 250 && done < total) return;
      shownAt = now;
      shown = true;
      const rate = Math.round(done / Math.max((now - started) / 1000, 0.001));
      const percent = total === 0 ? 100 : Math.floor((done / total) * 100);
      stream.write(
        `\r\x1b[2Kevent log: ${done.toLocaleString('en-US')} of ${total.toLocaleString('en-US')} rows (${percent}%), ${rate.toLocaleString('en-US')} rows/s`,
      );
    },
    end() {
      if (shown) stream.write('\n');
      shown = false;
    },
  };
}

function describeDuration(ms: number): string {
  for (const [unit, size] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
  ] as const)
    if (ms % size === 0) return `${ms / size}${unit}`;
  return `${ms / 1000}s`;
}
