import { setTimeout as sleep } from 'node:timers/promises';
import {
  countUnfinishedEventsBefore,
  existingEventUuids,
  ONE_WRITER_PAUSE_MS,
  purgeEventsWithUuids,
  purgeOldestEventsBefore,
} from '../db/stores/event-log.js';
import { formatTimestamp, systemClock } from '../time/clock.js';
import { type Command, EXIT } from './command.js';
import { DAY_US, parseArguments, parseDate, parseLimit } from './event-options.js';

type Selection = { kind: 'uuids'; uuids: string[]; force: boolean } | { kind: 'before'; before: number; limit: number; force: boolean };

// Events per statement (each its own transaction): short enough that the service's writes
// never wait long behind a purge.
const BATCH = 500;

function parse(args: readonly string[]): Selection | string {
  const parsed = parseArguments('eventpurge', args, { values: ['--older-than-date', '--limit'], flags: ['--force'] });
  if (typeof parsed === 'string') return parsed;
  const force = parsed.flags.has('--force');
  if (parsed.uuids.length > 0) {
    if (parsed.values.size > 0) return `eventpurge: ${[...parsed.values.keys()].join(', ')} cannot be combined with event uuids`;
    return { kind: 'uuids', uuids: parsed.uuids, force };
  }
  const limitText = parsed.values.get('--limit');
  const limit = limitText === undefined ? Number.MAX_SAFE_INTEGER : parseLimit('eventpurge', limitText);
  if (typeof limit === 'string') return limit;
  const dateText = parsed.values.get('--older-than-date');
  const before = dateText === undefined ? systemClock()() - DAY_US : parseDate('eventpurge', '--older-than-date', dateText);
  if (typeof before === 'string') return before;
  return { kind: 'before', before, limit, force };
}

const purged = (count: number) => `purged ${count} event${count === 1 ? '' : 's'}`;

export const eventpurge: Command = {
  name: 'eventpurge',
  usage: 'eventpurge [uuid…] [--older-than-date D] [--limit N] [--force]',
  summary:
    "delete events received before D ('YYYY-MM-DD HH:MM:SS' UTC; default: 24 h ago), oldest first, at most N (default: all), " +
    'with their matches and attempts, in batches of 500; uuids: those events whatever their date (no date or --limit with them). ' +
    'Events with a match still waiting for the policy or delivery are kept unless --force. Prints "purged <n> events"; exit 0',
  check: (args) => {
    const selection = parse(args);
    return typeof selection === 'string' ? selection : undefined;
  },
  async run({ args, database, out, err }) {
    const selection = parse(args);
    if (typeof selection === 'string') throw new Error(selection);
    const { db } = database;
    if (selection.kind === 'uuids') {
      const { uuids, force } = selection;
      let total = 0;
      for (let i = 0; i < uuids.length; i += BATCH) {
        const batch = uuids.slice(i, i + BATCH);
        const deleted = new Set(await purgeEventsWithUuids(db, batch, force));
        total += deleted.size;
        const left = batch.filter((uuid) => !deleted.has(uuid));
        const existing = await existingEventUuids(db, left);
        for (const uuid of left) {
          err(
            existing.has(uuid)
              ? `eventpurge: kept ${uuid}: it has deliveries still in progress (--force deletes it)`
              : `eventpurge: no event ${uuid} in the log`,
          );
        }
      }
      out(purged(total));
      return EXIT.ok;
    }
    const { before, force } = selection;
    let remaining = selection.limit;
    let total = 0;
    while (remaining > 0) {
      const batch = Math.min(BATCH, remaining);
      // Skipping what another purge holds (the server's own, on PostgreSQL) keeps a short batch
      // meaning "nothing left", rather than "the other purge took these first".
      const count = (await purgeOldestEventsBefore(db, before, batch, { force, skipLocked: database.capabilities.skipLocked })).eventUuids
        .length;
      total += count;
      remaining -= count;
      if (count < batch) break;
      if (database.capabilities.oneWriter) await sleep(ONE_WRITER_PAUSE_MS);
    }
    if (!force) {
      const kept = await countUnfinishedEventsBefore(db, before);
      if (kept > 0)
        err(
          `eventpurge: kept ${kept} event${kept === 1 ? '' : 's'} received before ${formatTimestamp(before)} with deliveries still in progress (--force deletes them)`,
        );
    }
    out(purged(total));
    return EXIT.ok;
  },
};
