import { liveSubscriptionPages } from '../db/stores/subscriptions.js';
import { routeAgain } from '../receive/receive.js';
import { LiveMatcher } from '../matching/live-matcher.js';
import { systemClock } from '../time/clock.js';
import { type Command, EXIT } from './command.js';
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
      // Matched and queued in one transaction, as /receive queues a new event's matches.
      const routed = await routeAgain(database, matcher, uuid, clock);
      if (routed === undefined) {
        err(`eventretry: no event ${uuid} in the log`);
        missing++;
        continue;
      }
      for (const subscription of routed.inProgress) {
        err(`eventretry: event ${uuid}: subscription ${subscription} still has a match in progress; not routed again`);
      }
      if (routed.matches.length === 0 && routed.inProgress.length === 0) err(`eventretry: event ${uuid} matches no live subscription`);
      for (const row of routed.matches) out(row.uuid);
      await stdoutFlushed();
    }
    return missing > 0 ? EXIT.failure : EXIT.ok;
  },
};
