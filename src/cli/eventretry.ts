import { eventsByUuid, insertMatches, pendingMatch } from '../db/events.js';
import { subscriptionsWithUnfinishedMatch } from '../db/event-log.js';
import { liveSubscriptionPages } from '../db/subscriptions.js';
import type { MatchesTable } from '../db/tables.js';
import type { JsonValue } from '../json.js';
import { LiveMatcher } from '../matching/live-matcher.js';
import { systemClock } from '../time/clock.js';
import { EXIT, type Command } from './command.js';
import { parseArguments, stdoutFlushed } from './event-options.js';

function parse(args: readonly string[]): string[] | string {
  const parsed = parseArguments('eventretry', args, { values: [], flags: [] });
  if (typeof parsed === 'string') return parsed;
  return parsed.uuids.length > 0 ? parsed.uuids : 'eventretry: no event uuid given';
}

export const eventretry: Command = {
  name: 'eventretry',
  usage: 'eventretry <uuid…>',
  summary:
    "route logged events again: match them against today's live subscriptions and queue new matches for the policy check " +
    'and delivery, due now; prints the new match uuids, one per line. A subscription whose match for the event is still ' +
    'in progress is skipped. Unknown uuids: said on stderr, the others are still routed, exit 1',
  check: (args) => {
    const uuids = parse(args);
    return typeof uuids === 'string' ? uuids : undefined;
  },
  async run({ args, database, out, err }) {
    const uuids = parse(args);
    if (typeof uuids === 'string') throw new Error(uuids);
    const { db } = database;
    const matcher = new LiveMatcher({
      onUnusable: (subscription) => err(`eventretry: subscription ${subscription} left out: its stored expression no longer compiles`),
    });
    for await (const page of liveSubscriptionPages(db)) matcher.load(page);
    const clock = systemClock();
    let missing = 0;
    for (const uuid of uuids) {
      const event = (await eventsByUuid(db, [uuid])).get(uuid);
      if (!event) {
        err(`eventretry: no event ${uuid} in the log`);
        missing++;
        continue;
      }
      // Its pending match will deliver it anyway: another would only deliver it twice.
      const inProgress = await subscriptionsWithUnfinishedMatch(db, uuid);
      const now = clock();
      const rows: MatchesTable[] = [];
      let skipped = 0;
      for (const subscription of matcher.match(JSON.parse(event.body) as JsonValue)) {
        if (inProgress.has(subscription.uuid)) {
          err(`eventretry: event ${uuid}: subscription ${subscription.uuid} still has a match in progress; not routed again`);
          skipped++;
          continue;
        }
        rows.push(pendingMatch(uuid, subscription, now));
      }
      await insertMatches(db, rows);
      if (rows.length === 0 && skipped === 0) err(`eventretry: event ${uuid} matches no live subscription`);
      for (const row of rows) out(row.uuid);
      await stdoutFlushed();
    }
    return missing > 0 ? EXIT.failure : EXIT.ok;
  },
};
