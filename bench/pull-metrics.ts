/**
 * What a running server says of its pull readers on GET /metrics: `notifications_pull_waiters`
 * (readers waiting now) and, where the server has it, `notifications_pull_database_operations_total`
 * by `operation` (the database operations readers cause: lookup, read, acknowledge). A server
 * without the counter gives `operations: undefined`, which the tables print as n/a.
 */
import { setTimeout as sleep } from 'node:timers/promises';

export interface PullMetrics {
  waiters: number;
  /** Operations so far by `operation`; undefined when the server has no such counter. */
  operations: Record<string, number> | undefined;
}

const WAITERS = 'notifications_pull_waiters';
export const OPERATIONS_METRIC = 'notifications_pull_database_operations_total';
const OPERATIONS = OPERATIONS_METRIC;
const DECLARED = /^# TYPE notifications_pull_database_operations(_total)? /;

export async function pullMetrics(serverUrl: string): Promise<PullMetrics> {
  const response = await fetch(`${serverUrl}/metrics`);
  const text = await response.text();
  if (!response.ok) throw new Error(`GET /metrics answered ${response.status}: ${text.slice(0, 200)}`);
  let waiters = NaN;
  let operations: Record<string, number> | undefined;
  for (const line of text.split('\n')) {
    if (line.startsWith(`${WAITERS} `)) waiters = Number(line.slice(WAITERS.length + 1));
    // A counter with labels has no sample before its first operation: its TYPE line says it is there.
    else if (DECLARED.test(line)) operations ??= {};
    else if (line.startsWith(OPERATIONS) && (line[OPERATIONS.length] === '{' || line[OPERATIONS.length] === ' ')) {
      const value = Number(line.slice(line.lastIndexOf(' ') + 1));
      const operation = /operation="([^"]*)"/.exec(line)?.[1] ?? '';
      operations ??= {};
      operations[operation] = (operations[operation] ?? 0) + value;
    }
  }
  return { waiters, operations };
}

/** The operations between two scrapes: each operation's, and `total`; undefined when either lacks the counter. */
export function operationsBetween(before: PullMetrics, after: PullMetrics): Record<string, number> | undefined {
  if (!before.operations || !after.operations) return undefined;
  const delta: Record<string, number> = {};
  let total = 0;
  for (const operation of new Set([...Object.keys(before.operations), ...Object.keys(after.operations)])) {
    delta[operation] = (after.operations[operation] ?? 0) - (before.operations[operation] ?? 0);
    total += delta[operation];
  }
  return { ...delta, total };
}

/** The operations as text for a table: `lookup 0, read 50, acknowledge 3,000` (each divided by `per`), or n/a. */
export function operationsText(delta: Record<string, number> | undefined, per = 1): string {
  if (!delta) return 'n/a';
  const parts = Object.entries(delta)
    .filter(([operation]) => operation !== 'total')
    .map(([operation, count]) => `${operation} ${formatCount(count / per)}`);
  return parts.length === 0 ? '0' : parts.join(', ');
}

function formatCount(value: number): string {
  return Number.isInteger(value) || Math.abs(value) >= 100 ? Math.round(value).toLocaleString('en-US') : value.toFixed(1);
}

export interface WaitersReached {
  waiters: number;
  reached: boolean;
}

/**
 * Polls the waiters gauge until it is at least `target`; gives up when it has not grown for
 * `stallMs`, or after `timeoutMs` in all, and says what it last saw.
 */
export async function waitersReach(serverUrl: string, target: number, stallMs = 10_000, timeoutMs = 120_000): Promise<WaitersReached> {
  const deadline = Date.now() + timeoutMs;
  let best = -1;
  let grewAt = Date.now();
  for (;;) {
    const { waiters } = await pullMetrics(serverUrl);
    if (waiters >= target) return { waiters, reached: true };
    if (waiters > best) {
      best = waiters;
      grewAt = Date.now();
    }
    if (Date.now() - grewAt > stallMs || Date.now() > deadline) return { waiters, reached: false };
    await sleep(100);
  }
}

/** Polls the waiters gauge until it is at most `target` (readers gone), for at most `timeoutMs`. */
export async function waitersFallTo(serverUrl: string, target: number, timeoutMs = 30_000): Promise<WaitersReached> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { waiters } = await pullMetrics(serverUrl);
    if (waiters <= target) return { waiters, reached: true };
    if (Date.now() > deadline) return { waiters, reached: false };
    await sleep(100);
  }
}
