/**
 * What becomes of an expression that throws while matching an event (the index takes it as no
 * match, so the event still goes to every other subscription): every subscription and event
 * is counted, and each subscription is logged the first time only, since an expression that
 * throws on one event usually throws on every event like it.
 */

export interface EvaluationErrorReporting {
  /** These many subscriptions did not match an event because their expression threw. */
  count(subscriptions: number): void;
  /** The first failure of `uuid` (the first since it was forgotten, beyond `remembered`). */
  log(uuid: string, error: unknown): void;
  /** How many logged subscriptions are remembered, the earliest forgotten first; default REMEMBERED_SUBSCRIPTIONS. */
  remembered?: number;
}

/** About 1 MB of uuids: all the failing subscriptions of any real deployment. */
export const REMEMBERED_SUBSCRIPTIONS = 10_000;

export function evaluationErrorReporter(reporting: EvaluationErrorReporting): (uuids: readonly string[], error: unknown) => void {
  const limit = reporting.remembered ?? REMEMBERED_SUBSCRIPTIONS;
  // A Set iterates in insertion order: its first member is the earliest logged.
  const logged = new Set<string>();
  return (uuids, error) => {
    reporting.count(uuids.length);
    for (const uuid of uuids) {
      if (logged.has(uuid)) continue;
      if (logged.size >= limit) logged.delete(logged.values().next().value!);
      logged.add(uuid);
      reporting.log(uuid, error);
    }
  };
}
