/**
 * Failures in a row, per subscription (the failure_runs table): delivery attempts are counted
 * into their subscription's run as they settle, and one that succeeds ends it. A run reaching
 * FAILING_AFTER is what its owner is told of, once per run.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../tables.js';

/** Failures in a row that make a subscription `failing`. */
export const FAILING_AFTER = 5;

/** One delivery attempt, as a run counts it. */
export interface RunAttempt {
  subscription: string;
  failed: boolean;
  /** Why it failed. */
  error?: string;
}

export interface RunReached {
  subscription: string;
  failures: number;
  /** The last failure's. */
  error: string;
}

/**
 * Counts `attempts` (in the order they ended) into their subscriptions' runs: a success ends
 * the run, failures after it start a new one. Returns the runs that reached FAILING_AFTER with
 * these attempts (not those already past it).
 */
export async function countRuns(db: Kysely<Database>, attempts: readonly RunAttempt[]): Promise<RunReached[]> {
  if (attempts.length === 0) return [];
  const runs = new Map<string, { ended: boolean; failures: number; error: string }>();
  for (const { subscription, failed, error } of attempts) {
    const run = runs.get(subscription) ?? { ended: false, failures: 0, error: '' };
    if (failed) {
      run.failures++;
      run.error = error ?? '';
    } else {
      run.ended = true;
      run.failures = 0;
    }
    runs.set(subscription, run);
  }
  await endRuns(
    db,
    [...runs].filter(([, run]) => run.ended).map(([uuid]) => uuid),
  );
  const reached: RunReached[] = [];
  // In one order everywhere, so that two instances counting the same subscriptions lock their rows alike.
  for (const [subscription, { failures, error }] of [...runs].sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (failures === 0) continue;
    const { failures: now } = await db
      .insertInto('failure_runs')
      .values({ subscription_uuid: subscription, failures })
      .onConflict((conflict) =>
        conflict
          .column('subscription_uuid')
          .doUpdateSet((eb) => ({ failures: eb('failure_runs.failures', '+', eb.ref('excluded.failures')) })),
      )
      .returning('failures')
      .executeTakeFirstOrThrow();
    if (now >= FAILING_AFTER && now - failures < FAILING_AFTER) reached.push({ subscription, failures: now, error });
  }
  return reached;
}

/** The runs of `subscriptions` end: a delivery succeeded, or the subscription was disabled, enabled or deleted. */
export async function endRuns(db: Kysely<Database>, subscriptions: readonly string[]): Promise<void> {
  if (subscriptions.length === 0) return;
  await endRunsStatement(db, subscriptions).execute();
}

/** endRuns' statement, for `subscriptions` (not empty). */
export function endRunsStatement(db: Kysely<Database>, subscriptions: readonly string[]) {
  return db.deleteFrom('failure_runs').where('subscription_uuid', 'in', subscriptions);
}
