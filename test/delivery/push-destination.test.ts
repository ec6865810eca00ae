import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { describe, it, type TestContext } from 'node:test';
import { pendingMatch } from '../../src/db/stores/events.js';
import type { EventRow } from '../../src/db/stores/events.js';
import type { SubscriptionRow } from '../../src/db/tables.js';
import type { DeliveryAttempt } from '../../src/delivery/destination.js';
import { pushDestination } from '../../src/delivery/push-destination.js';
import { createTargetClient } from '../../src/delivery/target-client.js';
import { addressGuard } from '../../src/net/address-guard.js';
import { systemClock } from '../../src/time/clock.js';
import { subscriptionRow } from '../support/subscription-row.js';
import { type ReceivedRequest, startStubServer, unusedPort } from './stub-server.js';

const EVENT: EventRow = {
  uuid: '01890a5d-ac96-7000-8000-000000000001',
  source: '/metadata',
  event_id: 'e-1',
  type: 'org.example.upload',
  spec_version: '1.0',
  body: JSON.stringify({ specversion: '1.0', id: 'e-1', source: '/metadata', type: 'org.example.upload' }),
  received: 1,
};

function destination(t: TestContext) {
  const target = createTargetClient({ timeoutMs: 2_000, connectionsPerOrigin: 2, guard: addressGuard({ allow: [], deny: [] }) });
  t.after(() => target.close());
  return pushDestination({ target, secretKey: null, secretOverlapUs: 0, clock: systemClock() });
}

async function stub(t: TestContext, answer: (request: ReceivedRequest, response: ServerResponse) => void) {
  const server = await startStubServer(answer);
  t.after(() => server.close());
  return server;
}

function attempt(subscription: SubscriptionRow): DeliveryAttempt {
  return { row: pendingMatch(EVENT.uuid, subscription, 1), event: EVENT, subscription, endWithinMs: 10_000 };
}

describe('push destination', () => {
  it('POSTs the event with the extensions added, signed, and a 2xx is accepted', async (t) => {
    const server = await stub(t, (_request, response) => response.writeHead(204).end());
    const subscription = subscriptionRow({ target_url: `${server.origin}/hook`, extensions: '{"tenant":"a"}' });
    const { outcome, durationMs } = await destination(t).deliver(attempt(subscription));
    assert.deepEqual(outcome, { kind: 'accepted', status: 204 });
    assert.ok(durationMs >= 0);
    const [received] = server.received;
    assert.equal((JSON.parse(received!.body) as { tenant?: string }).tenant, 'a');
    assert.match(String(received!.headers['webhook-signature']), /^v1,/);
  });

  it('an answer asking for later, and no answer at all, are later; a 4xx is permanent', async (t) => {
    const server = await stub(t, (request, response) => {
      if (request.url === '/busy') response.writeHead(503, { 'retry-after': '7' }).end('busy');
      else response.writeHead(410).end();
    });
    const push = destination(t);
    assert.deepEqual((await push.deliver(attempt(subscriptionRow({ target_url: `${server.origin}/busy` })))).outcome, {
      kind: 'later',
      status: 503,
      error: null,
      reason: 'target answered 503 Service Unavailable: busy',
      retryAfterMs: 7_000,
    });
    assert.deepEqual((await push.deliver(attempt(subscriptionRow({ target_url: `${server.origin}/gone` })))).outcome, {
      kind: 'permanent',
      status: 410,
      error: null,
      reason: 'target answered 410 Gone',
    });
    const refused = (await push.deliver(attempt(subscriptionRow({ target_url: `http://127.0.0.1:${await unusedPort()}/` })))).outcome;
    assert.equal(refused.kind, 'later');
    assert.equal('status' in refused && refused.status, null);
  });

  it('credentials this instance cannot open: permanent, not sent', async (t) => {
    const server = await stub(t, (_request, response) => response.writeHead(200).end());
    const subscription = subscriptionRow({ target_url: server.origin, auth: 'v1:c2VhbGVkIHdpdGggYW5vdGhlciBrZXk=' });
    const { outcome } = await destination(t).deliver(attempt(subscription));
    assert.equal(outcome.kind, 'permanent');
    assert.match('reason' in outcome ? outcome.reason : '', /^not sent: /);
    assert.equal(server.received.length, 0);
  });

  it('lanes are target origins; a URL that does not parse has a lane of its own', (t) => {
    const push = destination(t);
    assert.equal(push.laneOf(subscriptionRow({ target_url: 'https://hooks.example:8443/a?b=c' })), 'https://hooks.example:8443');
    assert.equal(push.laneOf(subscriptionRow({ target_url: 'not a url' })), 'unusable:not a url');
  });

  it('a subscription is unchanged for delivery unless its URL, credentials, extensions or signing secret change', (t) => {
    const push = destination(t);
    const before = subscriptionRow();
    assert.equal(push.unchanged(before, { ...before, name: 'renamed', jsonpath: '$.data' }), true);
    for (const change of [
      { target_url: 'http://127.0.0.1:10/' },
      { auth: '{"type":"bearer"}' },
      { extensions: '{"a":1}' },
      { signing_secret: 'whsec_x' },
    ])
      assert.equal(push.unchanged(before, { ...before, ...change }), false, JSON.stringify(change));
  });
});
