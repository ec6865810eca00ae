/**
 * `GET /eventmatch/{uuid}/deliveries/{elm}/event`: the event a delivery is for, to try an
 * expression on (the console's JSONPath tester loads it). Its owner gets the logged text exactly
 * as the producer sent it; anyone else, and any elm that is not one of the subscription's, 404.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import type { DeliveryRecord } from '../../src/subscriptions/delivery-history.js';
import { startApiApp } from '../support/app.js';
import { describeOn, openTestDatabase, testBackends } from '../support/database.js';

const ALICE = { 'http-remote-user': 'alice' };
/** Numbers JSON.parse would change, escapes, spacing and member order: what must come back as sent. */
const EVENT_TEXT =
  '{ "specversion" : "1.0", "id": "ev-1", "source": "/lab/7", "type": "org.example.run",\n' +
  '  "data": {"tag": "kept", "big": 12345678901234567890, "price": 1.50, "e": 1e2, "name": "caf\\u00e9"} }';

for (const backend of testBackends()) {
  describeOn(backend, `GET /eventmatch/{uuid}/deliveries/{elm}/event (${backend.name})`, () => {
    let test: Awaited<ReturnType<typeof openTestDatabase>>;
    let app: FastifyInstance;
    let subscription = '';
    let elm = '';

    before(async () => {
      test = await openTestDatabase(backend);
      app = await startApiApp(test.handle);
      subscription = await subscribe('kept');
      const received = await app.inject({
        method: 'POST',
        url: '/receive',
        headers: { 'content-type': 'application/cloudevents+json' },
        payload: EVENT_TEXT,
      });
      assert.equal(received.statusCode, 200, received.body);
      elm = (await deliveries(subscription))[0]!.elm;
    });
    after(async () => {
      await app?.close();
      await test?.close();
    });

    async function subscribe(tag: string): Promise<string> {
      const response = await app.inject({
        method: 'POST',
        url: '/eventmatch',
        headers: ALICE,
        payload: { name: tag, jsonpath: `$[?@.tag == '${tag}']`, target_url: 'http://127.0.0.1:9/hook', extensions: { lab: 'seven' } },
      });
      assert.equal(response.statusCode, 200, response.body);
      return response.json<{ uuid: string }>().uuid;
    }

    async function deliveries(uuid: string): Promise<DeliveryRecord[]> {
      const response = await app.inject({ method: 'GET', url: `/eventmatch/${uuid}/deliveries`, headers: ALICE });
      assert.equal(response.statusCode, 200, response.body);
      return response.json<DeliveryRecord[]>();
    }

    const eventOf = (uuid: string, match: string, headers: Record<string, string> = ALICE) =>
      app.inject({ method: 'GET', url: `/eventmatch/${uuid}/deliveries/${match}/event`, headers });

    it('answers the event as JSON, byte for byte as the producer sent it, without the subscription’s extensions', async () => {
      const response = await eventOf(subscription, elm);
      assert.equal(response.statusCode, 200, response.body);
      assert.equal(response.headers['content-type'], 'application/json; charset=utf-8');
      assert.equal(response.body, EVENT_TEXT);
      assert.equal(response.json<{ lab?: string }>().lab, undefined, 'extensions are added to what is sent, not to the log');
    });

    it('is what the tester needs: the same event tried with the subscription’s expression matches', async () => {
      const event = (await eventOf(subscription, elm)).body;
      const response = await app.inject({
        method: 'POST',
        url: '/eventmatch/test',
        headers: { ...ALICE, 'content-type': 'application/json' },
        payload: `{"jsonpath": "$.data.big", "event": ${event}}`,
      });
      assert.equal(response.statusCode, 200, response.body);
      assert.deepEqual(response.json(), { matches: true, dialect: 'rfc9535', values: [12345678901234567000], paths: ["$['data']['big']"] });
    });

    it('answers 404 SUBSCRIPTION_NOT_FOUND to anyone but the owner, and for an unknown or malformed subscription', async () => {
      for (const [uuid, headers] of [
        [subscription, { 'http-remote-user': 'mallory' }],
        [randomUUID(), ALICE],
        ['not-a-uuid', ALICE],
      ] as const) {
        const response = await eventOf(uuid, elm, headers);
        assert.equal(response.statusCode, 404, response.body);
        assert.equal(response.json<{ code: string }>().code, 'SUBSCRIPTION_NOT_FOUND');
      }
    });

    it('answers 404 DELIVERY_NOT_FOUND for an elm that is not one of this subscription’s deliveries', async () => {
      const other = await subscribe('other');
      for (const [uuid, match] of [
        [subscription, randomUUID()],
        [subscription, 'not-a-uuid'],
        [other, elm],
      ] as const) {
        const response = await eventOf(uuid, match);
        assert.equal(response.statusCode, 404, response.body);
        assert.equal(response.json<{ code: string }>().code, 'DELIVERY_NOT_FOUND');
        assert.equal(response.json<{ message: string }>().message, `delivery ${match} of subscription ${uuid} not found`);
      }
    });

    it('answers 401 without an identity, before anything else', async () => {
      const response = await eventOf('not-a-uuid', 'x', {});
      assert.equal(response.statusCode, 401, response.body);
      assert.equal(response.json<{ code: string }>().code, 'UNAUTHENTICATED');
    });

    it('still answers for a deleted subscription, as its history does', async () => {
      const deleted = await subscribe('kept');
      const received = await app.inject({
        method: 'POST',
        url: '/receive',
        headers: { 'content-type': 'application/cloudevents+json' },
        payload: EVENT_TEXT.replace('"ev-1"', '"ev-2"'),
      });
      assert.equal(received.statusCode, 200, received.body);
      const [delivery] = await deliveries(deleted);
      const removed = await app.inject({ method: 'DELETE', url: `/eventmatch/${deleted}`, headers: ALICE });
      assert.equal(removed.statusCode, 200, removed.body);
      const response = await eventOf(deleted, delivery!.elm);
      assert.equal(response.statusCode, 200, response.body);
      assert.equal(response.body, EVENT_TEXT.replace('"ev-1"', '"ev-2"'));
    });
  });
}
