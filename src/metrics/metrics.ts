/**
 * What the request handlers and the stages report as it happens. They depend on this small
 * interface only; the Prometheus objects behind it live in registry.ts.
 */
/** The kinds of a policy answer (policy-client.ts): allowed, denied, or no decision yet. */
export type PolicyOutcome = 'allow' | 'deny' | 'retry';
export type DeliveryOutcome = 'delivered' | 'retry' | 'failed' | 'cancelled';
/**
 * What a SQLite server found its subscriptions needed after other processes committed to its
 * file: nothing, the rows they added, or a reload of every one.
 */
export type OtherProcessCommitsOutcome = 'unchanged' | 'added' | 'reloaded';
/** What a pull reader asked the database: whose subscription it is, its events, or an acknowledgement. */
export type PullOperation = 'lookup' | 'read' | 'acknowledge';

export interface Metrics {
  /** An event was accepted by /receive: logged, or a duplicate of one already logged. */
  eventReceived(duplicate: boolean): void;
  /** Match rows created for a newly logged event. */
  matched(count: number): void;
  /** The policy service answered for one (event, user) and the answer was recorded. */
  policyAnswered(kind: PolicyOutcome): void;
  /**
   * A delivery row was settled: `attemptSeconds` is the HTTP exchange (none when cancelled
   * without one), `latencySeconds` the time from the match's creation to its delivery.
   */
  deliverySettled(outcome: DeliveryOutcome, attemptSeconds?: number, latencySeconds?: number): void;
  /** The retention purge deleted these many events, and these many matches with them. */
  eventsPurged(events: number, matches: number): void;
  /** An expression threw while matching an event, for these many subscriptions sharing it: no match for them. */
  matchEvaluationFailed(subscriptions: number): void;
  /** The HTTP API answered a request: `route` is the route's pattern (`/eventmatch/:uuid`), never the path asked for. */
  requestAnswered(method: string, route: string, status: number, seconds: number): void;
  /** SQLite: a look found commits of other processes to the file since the last one, and the subscriptions were brought in step. */
  otherProcessCommits(outcome: OtherProcessCommitsOutcome): void;
  /** Pull readers made one database call (readers woken together share theirs: pull/shared-reads.ts). */
  pullDatabaseOperation(operation: PullOperation): void;
}
