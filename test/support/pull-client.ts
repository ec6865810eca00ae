/**
 * What the pull tests ask a running server (test/support/processes.ts): pull subscriptions,
 * events in, events read, the delivery history, the waiting readers.
 */
import assert from 'node:assert/strict';
import { eventually } from './http-stub.js';
import type { RunningServer } from './processes.js';

const CE = 'application/cloudevents+json; charset=utf-8';

export interface Pulled {
  events: Array<{ cursor: string; elm: string; event: Record<string, unknown> }>;
  next: string;
}

export interface Delivery {
  elm: string;
  state: string;
  attempts: Array<{ stage: string }>;
}

export function createSubscription(server: RunningServer, user: string, body: unknown): Promise<Response> {
  return fetch(`${server.url}/eventmatch`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'http-remote-user': user },
    body: JSON.stringify(body),
  });
}

/** A pull subscription of `user` matching every event with `data.n`; its uuid. */
export async function pullSubscription(server: RunningServer, user: string, extensions: object = {}): Promise<string> {
  const response = await createSubscription(server, user, { name: 'pull', jsonpath: '$.data.n', delivery: 'pull', extensions });
  assert.equal(response.status, 200, await response.clone().text());
  const record = (await response.json()) as { uuid: string; delivery: string; target_url: unknown };
  assert.equal(record.delivery, 'pull');
  assert.equal(record.target_url, null);
  return record.uuid;
}

/** A structured-mode CloudEvent (its JSON text) into /receive: 200. */
export async function receive(server: RunningServer, event: string): Promise<void> {
  const response = await fetch(`${server.url}/receive`, { method: 'POST', headers: { 'content-type': CE }, body: event });
  assert.equal(response.status, 200, await response.text());
}

export async function pull(server: RunningServer, user: string, uuid: string, query = ''): Promise<Pulled> {
  const response = await fetch(`${server.url}/eventmatch/${uuid}/events${query}`, { headers: { 'http-remote-user': user } });
  assert.equal(response.status, 200, await response.clone().text());
  return (await response.json()) as Pulled;
}

export async function history(server: RunningServer, user: string, uuid: string): Promise<Delivery[]> {
  const response = await fetch(`${server.url}/eventmatch/${uuid}/deliveries`, { headers: { 'http-remote-user': user } });
  assert.equal(response.status, 200);
  return (await response.json()) as Delivery[];
}

/** Once `server` has `count` pull readers waiting (its gauge). */
export async function waitersAre(server: RunningServer, count: number): Promise<void> {
  await eventually(async () => {
    const text = await (await fetch(`${server.url}/metrics`)).text();
    return new RegExp(`^notifications_pull_waiters ${count}$`, 'm').test(text);
  }, `${count} pull readers waiting`);
}
