import {
  attemptsOfEvents,
  eventsFromPosition,
  type LogPosition,
  matchesOfEvents,
  oldestOfMostRecentEvents,
} from '../db/stores/event-log.js';
import { eventsByUuid } from '../db/stores/events.js';
import { compactText } from '../cloudevents/json-text.js';
import type { AttemptsTable, EventsTable, MatchesTable } from '../db/tables.js';
import { formatTimestamp, systemClock } from '../time/clock.js';
import { type Command, type CommandContext, EXIT } from './command.js';
import { DAY_US, parseArguments, parseDate, parseLimit, stdoutFlushed } from './event-options.js';

type Selection =
  { kind: 'uuids'; uuids: string[]; json: boolean } | { kind: 'window'; from: number; to: number; limit: number; json: boolean };

const DEFAULT_LIMIT = 10;
// Events per query: keeps every IN list far below the databases' bind parameter limits.
const PAGE = 500;

function parse(args: readonly string[]): Selection | string {
  const parsed = parseArguments('eventget', args, { values: ['--limit', '--start-date', '--end-date'], flags: ['--json'] });
  if (typeof parsed === 'string') return parsed;
  const json = parsed.flags.has('--json');
  if (parsed.uuids.length > 0) {
    if (parsed.values.size > 0) return `eventget: ${[...parsed.values.keys()].join(', ')} cannot be combined with event uuids`;
    return { kind: 'uuids', uuids: parsed.uuids, json };
  }
  const limitText = parsed.values.get('--limit');
  const limit = limitText === undefined ? DEFAULT_LIMIT : parseLimit('eventget', limitText);
  if (typeof limit === 'string') return limit;
  const endText = parsed.values.get('--end-date');
  const to = endText === undefined ? systemClock()() : parseDate('eventget', '--end-date', endText);
  if (typeof to === 'string') return to;
  const startText = parsed.values.get('--start-date');
  const from = startText === undefined ? to - DAY_US : parseDate('eventget', '--start-date', startText);
  if (typeof from === 'string') return from;
  if (from > to) return `eventget: the start date ${formatTimestamp(from)} is after the end date ${formatTimestamp(to)}`;
  return { kind: 'window', from, to, limit, json };
}

function textLines(event: EventsTable, matches: readonly MatchesTable[]): string[] {
  const code = (value: number | null) => (value === null ? '-' : String(value));
  return [
    `Event - ${event.uuid}`,
    compactText(event.body),
    ...matches.map((m) => `    ELM ${m.uuid} (${formatTimestamp(m.created)}) policy ${code(m.policy_code)} target ${code(m.target_code)}`),
  ];
}

/** The event goes in as stored, the text the producer sent: a number such as 12345678901234567890 keeps its digits. */
function jsonLine(event: EventsTable, matches: readonly MatchesTable[], attempts: Map<string, AttemptsTable[]>): string {
  const head = JSON.stringify({ uuid: event.uuid, received: formatTimestamp(event.received) }).slice(0, -1);
  return `${head},"event":${compactText(event.body)},"matches":${JSON.stringify(
    matches.map((m) => ({
      uuid: m.uuid,
      created: formatTimestamp(m.created),
      subscription: m.subscription_uuid,
      user: m.owner,
      state: m.state,
      policy: m.policy_code,
      target: m.target_code,
      attempts: (attempts.get(m.uuid) ?? []).map((a) => ({
        at: formatTimestamp(a.at),
        stage: a.stage,
        status: a.status,
        error: a.error,
        duration_ms: a.duration_ms,
      })),
    })),
  )}}`;
}

async function print({ database, out }: CommandContext, events: readonly EventsTable[], json: boolean): Promise<void> {
  const uuids = events.map((e) => e.uuid);
  const matches = await matchesOfEvents(database.db, uuids);
  const attempts = json ? await attemptsOfEvents(database.db, uuids) : new Map<string, AttemptsTable[]>();
  for (const event of events) {
    const own = matches.get(event.uuid) ?? [];
    if (json) out(jsonLine(event, own, attempts));
    else for (const line of textLines(event, own)) out(line);
  }
  await stdoutFlushed();
}

export const eventget: Command = {
  name: 'eventget',
  usage: 'eventget [uuid…] [--limit N] [--start-date D] [--end-date D] [--json]',
  summary:
    "print logged events and their matches (ELM lines); default: the 10 most recent of the 24 h before --end-date (default now), oldest first; dates 'YYYY-MM-DD HH:MM:SS' UTC; " +
    'uuids: those events (no dates or --limit with them). --json: one object per event and line: ' +
    '{"uuid","received","event":{…},"matches":[{"uuid","created","subscription","user","state","policy","target","attempts":[{"at","stage","status","error","duration_ms"}]}]} ' +
    '(policy, target: null until known). An unknown uuid: exit 1',
  check: (args) => {
    const selection = parse(args);
    return typeof selection === 'string' ? selection : undefined;
  },
  async run(context) {
    const selection = parse(context.args);
    if (typeof selection === 'string') throw new Error(selection);
    if (selection.kind === 'uuids') {
      const missing: string[] = [];
      for (let i = 0; i < selection.uuids.length; i += PAGE) {
        const wanted = selection.uuids.slice(i, i + PAGE);
        const found = await eventsByUuid(context.database.db, wanted);
        await print(
          context,
          wanted.flatMap((uuid) => found.get(uuid) ?? []),
          selection.json,
        );
        missing.push(...wanted.filter((uuid) => !found.has(uuid)));
      }
      for (const uuid of missing) context.err(`eventget: no event ${uuid} in the log`);
      return missing.length > 0 ? EXIT.failure : EXIT.ok;
    }
    const { from, to, json } = selection;
    let remaining = selection.limit;
    // Start at the oldest of the `limit` most recent, then page forward: oldest first, bounded memory.
    let position: LogPosition = (await oldestOfMostRecentEvents(context.database.db, { from, to }, remaining)) ?? {
      received: from,
      uuid: '',
      inclusive: true,
    };
    while (remaining > 0) {
      const pageSize = Math.min(PAGE, remaining);
      const events = await eventsFromPosition(context.database.db, position, to, pageSize);
      await print(context, events, json);
      remaining -= events.length;
      const last = events.at(-1);
      if (events.length < pageSize || !last) break;
      position = { received: last.received, uuid: last.uuid, inclusive: false };
    }
    return EXIT.ok;
  },
};
