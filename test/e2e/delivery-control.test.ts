/**
 * Delivery control, the whole way: the built server as a process, its targets real HTTP
 * servers on 127.0.0.1, on every database. A subscription's `rate_limit` holds its deliveries
 * to that many a second without dropping one; one delivery can be sent again on request.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, it } from 'node:test';
import type { DeliveryRecord } from '../../src/subscriptions/delivery-history.js';
import { describeOn, testBackends } from '../support/database.js';
import { eventually, type HttpStub, startStub } from '../support/http-stub.js';
import { serverOn } from '../support/server-on.js';

const ALICE = { 'content-type': 'application/json', 'http-remote-user': 'alice' };

for (const backend of testBackends()) {
  describeOn(backend, `delivery control end to end (${backend.name})`, () => {
    const server = serverOn(
      backend,
      { NOTIFICATIONS_RETRY_DELAYS: '100ms,200ms', NOTIFICATIONS_TARGET_TIMEOUT: '2s', NOTIFICATIONS_LEASE: '10s' },
      { open: true },
    );
    const stubs: HttpStub[] = [];

    /** A target that answers 200 and records when each request came (ms). */
    async function timedTarget(): Promise<{ stub: HttpStub; times: number[] }> {
      const times: number[] = [];
      const stub = await startStub((_request, response) => {
        times.push(performance.now());
        response.writeHead(200).end();
      });
      stubs.push(stub);
      return { stub, times };
    }

    async function subscribe(tag: string, body: Record<string, unknown>): Promise<string> {
      const response = await fetch(`${server.url}/eventmatch`, {
        method: 'POST',
        headers: ALICE,
        body: JSON.stringify({ name: tag, jsonpath: `$.data[?@.tag == '${tag}']`, ...body }),
      });
      assert.equal(response.status, 200, await response.clone().text());
      return ((await response.json()) as { uuid: string }).uuid;
    }

    async function receive(tag: string, id: string): Promise<void> {
      const body = JSON.stringify({ specversion: '1.0', id, source: '/control', type: 't', data: [{ tag }] });
      const response = await fetch(`${server.url}/receive`, {
        method: 'POST',
        headers: { 'content-type': 'application/cloudevents+json' },
        body,
      });
      assert.equal(response.status, 200, await response.text());
    }

    // Registered after serverOn's: the targets close once the server has stopped.
    after(async () => {
      for (const stub of stubs) await stub.close();
    });

    it('holds a subscription with rate_limit 5 to 5 deliveries a second, and drops none of 20', async () => {
      const { stub, times } = await timedTarget();
      const uuid = await subscribe('limited', { target_url: `${stub.url}/hook`, rate_limit: 5 });
      await Promise.all(Array.from({ length: 20 }, (_, i) => receive('limited', `limited-${i}`)));
      await eventually(() => times.length >= 20, 'all 20 deliveries arrive', 30_000);
      const spanMs = times.at(-1)! - times[0]!;
      // 19 gaps of 200 ms: 3.8 s; a little under allows for the network's jitter.
      assert.ok(spanMs >= 3_000, `20 deliveries at 5 a second took ${Math.round(spanMs)} ms`);
      assert.ok(spanMs <= 15_000, `20 deliveries at 5 a second took ${Math.round(spanMs)} ms`);
      for (const first of times) {
        const inSecond = times.filter((t) => t >= first && t < first + 1_000).length;
        assert.ok(inSecond <= 6, `${inSecond} deliveries in the second from ${Math.round(first - times[0]!)} ms`);
      }
      // None is counted as a failure or a retry: each was delivered at its first attempt. The
      // target may have answered the last before its settlement committed.
      const delivered = async () =>
        (await server.db.db.selectFrom('matches').select(['state', 'attempts']).where('subscription_uuid', '=', uuid).execute()).filter(
          (r) => r.state === 'delivered',
        );
      await eventually(async () => (await delivered()).length === 20, 'all 20 recorded delivered', 30_000);
      const limited = await delivered();
      assert.ok(
        limited.every((r) => r.attempts === 1),
        JSON.stringify(limited),
      );
      // Nothing of theirs comes again. All 20 are recorded delivered, so none is left in the queue:
      // a copy could only be waiting in the server, in the subscription's lane, where an event
      // received now starts behind it (one start every 200 ms, in order). Once that event has
      // arrived, each of the 20 has been there exactly once, and it came last.
      await receive('limited', 'limited-after');
      const ids = () => stub.requests.map((request) => (JSON.parse(request.body) as { id: string }).id);
      await eventually(() => ids().includes('limited-after'), 'the event received after them is delivered', 30_000);
      assert.deepEqual(
        ids().toSorted(),
        [...Array.from({ length: 20 }, (_, i) => `limited-${i}`), 'limited-after'].toSorted(),
        'each delivered once',
      );
      assert.equal(ids().at(-1), 'limited-after');
    });

    const retry = (uuid: string, elm: string, user = 'alice') =>
      fetch(`${server.url}/eventmatch/${uuid}/deliveries/${elm}/retry`, { method: 'POST', headers: { 'http-remote-user': user } });
    async function onlyDelivery(uuid: string): Promise<DeliveryRecord> {
      const response = await fetch(`${server.url}/eventmatch/${uuid}/deliveries`, { headers: { 'http-remote-user': 'alice' } });
      const [delivery, ...more] = (await response.json()) as DeliveryRecord[];
      assert.equal(more.length, 0);
      return delivery!;
    }
    const settledState = async (uuid: string, state: string) =>
      eventually(async () => (await onlyDelivery(uuid)).state === state, `the delivery is ${state}`);

    it('sends a delivered delivery again on request: 202 with it, the target receives it again, its history kept', async () => {
      const { stub } = await timedTarget();
      const uuid = await subscribe('again', { target_url: `${stub.url}/hook` });
      await receive('again', 'again-1');
      await settledState(uuid, 'delivered');
      const { elm } = await onlyDelivery(uuid);

      assert.equal((await retry(uuid, elm, 'mallory')).status, 404, "someone else's");
      const unknown = await retry(uuid, randomUUID());
      assert.equal(unknown.status, 404);
      assert.equal(((await unknown.json()) as { code: string }).code, 'DELIVERY_NOT_FOUND');

      const response = await retry(uuid, elm);
      assert.equal(response.status, 202, await response.clone().text());
      const queued = (await response.json()) as DeliveryRecord;
      assert.equal(queued.elm, elm);
      await eventually(() => stub.requests.length === 2, 'the target receives it again');
      assert.equal(stub.requests[1]!.body, stub.requests[0]!.body, 'the same event');
      await settledState(uuid, 'delivered');
      const after = await onlyDelivery(uuid);
      assert.deepEqual(
        after.attempts.map((a) => a.status),
        [200, 200],
        'both deliveries in its history',
      );
    });

    it('sends a failed delivery again once its subscription is enabled; while disabled: 409 SUBSCRIPTION_DISABLED', async () => {
      const { stub } = await timedTarget();
      stub.answer((_request, response) => void response.writeHead(400).end('no'));
      const uuid = await subscribe('failing', { target_url: `${stub.url}/hook` });
      await receive('failing', 'failing-1');
      await settledState(uuid, 'failed');
      const { elm } = await onlyDelivery(uuid);

      const refused = await retry(uuid, elm);
      assert.equal(refused.status, 409);
      assert.equal(((await refused.json()) as { code: string }).code, 'SUBSCRIPTION_DISABLED');

      stub.answer((_request, response) => void response.writeHead(200).end());
      const enabled = await fetch(`${server.url}/eventmatch/${uuid}`, {
        method: 'PUT',
        headers: ALICE,
        body: JSON.stringify({ disabled: null }),
      });
      assert.equal(enabled.status, 200);
      const response = await retry(uuid, elm);
      assert.equal(response.status, 202, await response.clone().text());
      await eventually(() => stub.requests.length === 2, 'the target receives it again');
      await settledState(uuid, 'delivered');
      assert.deepEqual(
        (await onlyDelivery(uuid)).attempts.map((a) => a.status),
        [400, 200],
      );
    });

    it('leaves a subscription without a limit as fast as before', async () => {
      const { stub, times } = await timedTarget();
      await subscribe('unlimited', { target_url: `${stub.url}/hook` });
      await Promise.all(Array.from({ length: 20 }, (_, i) => receive('unlimited', `unlimited-${i}`)));
      await eventually(() => times.length >= 20, 'all 20 deliveries arrive', 30_000);
      assert.ok(times.at(-1)! - times[0]! < 2_500, `20 unlimited deliveries took ${Math.round(times.at(-1)! - times[0]!)} ms`);
    });
  });
}
