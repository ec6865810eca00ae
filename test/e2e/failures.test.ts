/**
 * When things go wrong, end to end: the built server as a process, misbehaving targets and a
 * flaky policy service as real HTTP servers on 127.0.0.1, on every database. Short retry
 * schedules and time-outs keep it to a few seconds per case; the worker loops poll once a
 * second, so a retry comes due within about a second of its scheduled time.
 */
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { after, before, it } from 'node:test';
import { describeOn, testBackends } from '../support/database.js';
import { eventually, type HttpStub, reply, type StubAnswer, type StubRequest, startStub } from '../support/http-stub.js';
import { freePort, type RunningServer } from '../support/processes.js';
import { serverOn } from '../support/server-on.js';

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}$/;
/** Two retries: a delivery that keeps failing is tried three times, then given up. */
const RETRY_DELAYS = '200ms,300ms';
const TRIES = 3;
const TARGET_TIMEOUT = '300ms';

interface Subscription {
  uuid: string;
  disabled: string | null;
  error: string | null;
}

interface Delivery {
  elm: string;
  event: { uuid: string; id: string; type: string; source: string };
  created: string;
  state: string;
  policy: number | null;
  target: number | null;
  attempts: Array<{ at: string; stage: string; status: number | null; error: string | null; duration_ms: number }>;
}

const json = (user: string) => ({ 'content-type': 'application/json', 'http-remote-user': user });

async function subscribe(server: RunningServer, user: string, source: string, targetUrl: string): Promise<Subscription> {
  const response = await fetch(`${server.url}/eventmatch`, {
    method: 'POST',
    headers: json(user),
    body: JSON.stringify({ name: source, jsonpath: `$[?$.source == '${source}']`, target_url: targetUrl }),
  });
  assert.equal(response.status, 200, await response.clone().text());
  return (await response.json()) as Subscription;
}

async function readSubscription(server: RunningServer, user: string, uuid: string): Promise<Subscription> {
  const response = await fetch(`${server.url}/eventmatch/${uuid}`, { headers: { 'http-remote-user': user } });
  assert.equal(response.status, 200, await response.clone().text());
  return (await response.json()) as Subscription;
}

async function put(server: RunningServer, user: string, uuid: string, body: unknown): Promise<Subscription> {
  const response = await fetch(`${server.url}/eventmatch/${uuid}`, { method: 'PUT', headers: json(user), body: JSON.stringify(body) });
  assert.equal(response.status, 200, await response.clone().text());
  return (await response.json()) as Subscription;
}

const event = (source: string, id: string) =>
  JSON.stringify({ specversion: '1.0', id, source, type: 'org.example.failure', data: { n: 1 } });

function receive(server: RunningServer, body: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${server.url}/receive`, { method: 'POST', headers: { 'content-type': 'application/cloudevents+json', ...headers }, body });
}

async function receiveOne(server: RunningServer, source: string, id: string): Promise<{ uuid: string; matches: number }> {
  const response = await receive(server, event(source, id));
  assert.equal(response.status, 200, await response.clone().text());
  return (await response.json()) as { uuid: string; matches: number };
}

/** Answers 200 only after `ms`: slower than the time-out, the server has given up by then. */
const slowly =
  (ms: number): StubAnswer =>
  (_request: StubRequest, response: ServerResponse) => {
    const timer = setTimeout(() => response.writeHead(200).end(), ms);
    response.on('close', () => clearTimeout(timer));
  };

/** Microseconds since the epoch of a `YYYY-MM-DDTHH:MM:SS.ffffff` (UTC) timestamp. */
const micros = (stamp: string) => Date.parse(`${stamp.slice(0, 19)}Z`) * 1000 + Number(stamp.slice(20));

for (const backend of testBackends()) {
  describeOn(backend, `delivery failures end to end (${backend.name})`, () => {
    let policy: HttpStub;
    before(async () => {
      policy = await startStub((request, response) => {
        const user = decodeURIComponent(request.url.replace(/^\/events\//, ''));
        response.writeHead(policyFailing.has(user) ? 500 : 200).end();
      });
    });
    const server = serverOn(
      backend,
      () => ({
        NOTIFICATIONS_POLICY_URL: policy.url,
        NOTIFICATIONS_RETRY_DELAYS: RETRY_DELAYS,
        NOTIFICATIONS_TARGET_TIMEOUT: TARGET_TIMEOUT,
        NOTIFICATIONS_LEASE: '2s',
      }),
      { open: true },
    );
    const stubs: HttpStub[] = [];
    /** Users the policy service answers 500 for, while they are in here. */
    const policyFailing = new Set<string>();
    const target = async (answer?: StubAnswer) => {
      const stub = await startStub(answer);
      stubs.push(stub);
      return stub;
    };
    const matchesOf = (subscription: string) =>
      server.db.db.selectFrom('matches').selectAll().where('subscription_uuid', '=', subscription).execute();
    const attemptsOf = (match: string) =>
      server.db.db.selectFrom('attempts').selectAll().where('match_uuid', '=', match).orderBy('at').execute();
    let retryAfterCase: { subscription: string; user: string; eventId: string } | undefined;

    // Registered after serverOn's: the stubs close once the server has stopped.
    after(async () => {
      for (const stub of [policy, ...stubs]) await stub.close();
    });

    it('honours Retry-After on a 429: the next try comes no sooner than a second later, then delivers', async () => {
      const arrivals: number[] = [];
      const hook = await target((_request, response) => {
        arrivals.push(Date.now());
        if (arrivals.length === 1) response.writeHead(429, { 'retry-after': '1' }).end('slow down');
        else response.writeHead(200).end();
      });
      const sub = await subscribe(server, 'alice', '/e2e/429', hook.url);
      assert.equal((await receiveOne(server, '/e2e/429', 'busy-1')).matches, 1);
      await eventually(async () => (await matchesOf(sub.uuid))[0]?.state === 'delivered', 'delivered after the 429', 10_000);
      assert.equal(arrivals.length, 2, 'one 429, then one delivery');
      assert.ok(
        arrivals[1]! - arrivals[0]! >= 950,
        `the second try came ${arrivals[1]! - arrivals[0]!} ms after the 429, not at least 1 s`,
      );
      const [row] = await matchesOf(sub.uuid);
      assert.deepEqual([row!.policy_code, row!.target_code], [200, 200]);
      const attempts = await attemptsOf(row!.uuid);
      assert.deepEqual(
        attempts.map((a) => [a.stage, a.status, a.error]),
        [
          ['deliver', 429, null],
          ['deliver', 200, null],
        ],
      );
      assert.ok(attempts[1]!.at - attempts[0]!.at >= 950_000, 'the recorded attempts are a second apart');
      retryAfterCase = { subscription: sub.uuid, user: 'alice', eventId: 'busy-1' };
    });

    it('GET /eventmatch/{uuid}/deliveries shows the 429 case, attempt by attempt, to its owner only', async () => {
      assert.ok(retryAfterCase, 'the Retry-After case ran');
      const url = `${server.url}/eventmatch/${retryAfterCase.subscription}/deliveries`;
      const response = await fetch(url, { headers: { 'http-remote-user': retryAfterCase.user } });
      assert.equal(response.status, 200, await response.clone().text());
      const deliveries = (await response.json()) as Delivery[];
      assert.equal(deliveries.length, 1);
      const [delivery] = deliveries;
      const [row] = await matchesOf(retryAfterCase.subscription);
      assert.equal(delivery!.elm, row!.uuid);
      assert.deepEqual(delivery!.event, {
        uuid: row!.event_uuid,
        id: retryAfterCase.eventId,
        type: 'org.example.failure',
        source: '/e2e/429',
      });
      assert.match(delivery!.created, TIMESTAMP);
      assert.deepEqual([delivery!.state, delivery!.policy, delivery!.target], ['delivered', 200, 200]);
      assert.deepEqual(
        delivery!.attempts.map((a) => [a.stage, a.status, a.error]),
        [
          ['deliver', 429, null],
          ['deliver', 200, null],
        ],
      );
      for (const a of delivery!.attempts) {
        assert.match(a.at, TIMESTAMP);
        assert.ok(Number.isInteger(a.duration_ms) && a.duration_ms >= 0);
      }
      assert.ok(micros(delivery!.attempts[1]!.at) - micros(delivery!.attempts[0]!.at) >= 950_000);
      const stranger = await fetch(url, { headers: { 'http-remote-user': 'mallory' } });
      assert.equal(stranger.status, 404);
      assert.equal((await fetch(url)).status, 401);
    });

    it('records a time-out for a slow target, and disables the subscription once the schedule is exhausted', async () => {
      const slow = await target(slowly(1_500));
      const sub = await subscribe(server, 'bob', '/e2e/slow', slow.url);
      assert.equal((await receiveOne(server, '/e2e/slow', 'slow-1')).matches, 1);
      await eventually(
        async () => (await readSubscription(server, 'bob', sub.uuid)).disabled !== null,
        'the slow target’s subscription is disabled',
        15_000,
      );
      const record = await readSubscription(server, 'bob', sub.uuid);
      assert.equal(record.error, `gave up after ${TRIES} attempts: time-out after 300 ms`);
      const [row] = await matchesOf(sub.uuid);
      assert.deepEqual([row!.state, row!.target_code, row!.attempts], ['failed', null, TRIES]);
      const attempts = await attemptsOf(row!.uuid);
      assert.deepEqual(
        attempts.map((a) => [a.stage, a.status, a.error]),
        Array.from({ length: TRIES }, () => ['deliver', null, 'time-out after 300 ms']),
      );
      for (const a of attempts) assert.ok(a.duration_ms >= 290 && a.duration_ms < 1_500, `an attempt took ${a.duration_ms} ms`);
      assert.equal(slow.requests.length, TRIES);
    });

    it('retries a target whose port refuses connections, then disables the subscription', async () => {
      const port = await freePort();
      const sub = await subscribe(server, 'carol', '/e2e/refused', `http://127.0.0.1:${port}/hook`);
      assert.equal((await receiveOne(server, '/e2e/refused', 'refused-1')).matches, 1);
      await eventually(
        async () => (await readSubscription(server, 'carol', sub.uuid)).disabled !== null,
        'the unreachable target’s subscription is disabled',
        15_000,
      );
      assert.equal((await readSubscription(server, 'carol', sub.uuid)).error, `gave up after ${TRIES} attempts: connection refused`);
      const [row] = await matchesOf(sub.uuid);
      assert.deepEqual([row!.state, row!.target_code], ['failed', null]);
      const attempts = await attemptsOf(row!.uuid);
      assert.deepEqual(
        attempts.map((a) => [a.stage, a.status, a.error]),
        Array.from({ length: TRIES }, () => ['deliver', null, 'connection refused']),
      );
    });

    it('waits out a policy service answering 500: never disables, records the policy attempts, delivers once it recovers', async () => {
      const hook = await target();
      const sub = await subscribe(server, 'dora', '/e2e/policy-down', hook.url);
      policyFailing.add('dora');
      const asked = () => policy.requests.filter((r) => r.url === '/events/dora').length;
      try {
        assert.equal((await receiveOne(server, '/e2e/policy-down', 'policy-1')).matches, 1);
        // More failures than the retry schedule has entries: a target would have been given up on.
        await eventually(() => asked() >= TRIES + 1, 'the policy service is asked again and again', 15_000);
        const [waiting] = await matchesOf(sub.uuid);
        assert.deepEqual([waiting!.state, waiting!.policy_code], ['policy', null]);
        assert.equal(hook.requests.length, 0, 'nothing is delivered without a policy decision');
      } finally {
        policyFailing.delete('dora');
      }
      await eventually(
        async () => (await matchesOf(sub.uuid))[0]?.state === 'delivered',
        'delivered once the policy service recovers',
        10_000,
      );
      const record = await readSubscription(server, 'dora', sub.uuid);
      assert.deepEqual([record.disabled, record.error], [null, null]);
      const [row] = await matchesOf(sub.uuid);
      assert.deepEqual([row!.policy_code, row!.target_code], [200, 200]);
      const attempts = await attemptsOf(row!.uuid);
      const policyAttempts = attempts.filter((a) => a.stage === 'policy');
      assert.ok(policyAttempts.length >= TRIES + 1, `${policyAttempts.length} policy attempts recorded`);
      for (const a of policyAttempts) assert.deepEqual([a.status, a.error], [500, 'policy service answered 500 Internal Server Error']);
      assert.deepEqual(
        attempts.filter((a) => a.stage === 'deliver').map((a) => a.status),
        [200],
      );
      assert.equal(hook.requests.length, 1);
    });

    it('gives a failing target its whole retry schedule after a policy outage', async () => {
      const hook = await target(reply(503, 'down too'));
      const sub = await subscribe(server, 'fred', '/e2e/both-down', hook.url);
      policyFailing.add('fred');
      try {
        assert.equal((await receiveOne(server, '/e2e/both-down', 'both-1')).matches, 1);
        await eventually(
          () => policy.requests.filter((r) => r.url === '/events/fred').length >= TRIES,
          'the policy service is asked repeatedly',
          15_000,
        );
      } finally {
        policyFailing.delete('fred');
      }
      await eventually(
        async () => (await readSubscription(server, 'fred', sub.uuid)).disabled !== null,
        'the failing target’s subscription is disabled',
        15_000,
      );
      assert.equal(hook.requests.length, TRIES, 'the target is tried as often as the schedule says');
      assert.equal(
        (await readSubscription(server, 'fred', sub.uuid)).error,
        `gave up after ${TRIES} attempts: target answered 503 Service Unavailable: down too`,
      );
    });

    it('routes nothing to a subscription disabled with PUT, and routes again once it is re-enabled', async () => {
      const hook = await target();
      const sub = await subscribe(server, 'erin', '/e2e/toggle', hook.url);
      const disabled = await put(server, 'erin', sub.uuid, { disabled: 'now' });
      assert.match(disabled.disabled ?? '', TIMESTAMP);
      assert.equal((await receiveOne(server, '/e2e/toggle', 'while-disabled')).matches, 0);
      assert.deepEqual(await matchesOf(sub.uuid), []);

      const enabled = await put(server, 'erin', sub.uuid, { disabled: null });
      assert.deepEqual([enabled.disabled, enabled.error], [null, null]);
      assert.equal((await receiveOne(server, '/e2e/toggle', 'after-enable')).matches, 1);
      await eventually(() => hook.requests.length === 1, 'the event after re-enabling is delivered');
      assert.equal((JSON.parse(hook.requests[0]!.body) as { id: string }).id, 'after-enable');
      // The one match there is has finished: the event received while disabled made none, so it
      // can never be delivered.
      await eventually(async () => (await matchesOf(sub.uuid)).every((m) => m.state === 'delivered'), 'the delivery is recorded');
      assert.deepEqual(
        (await matchesOf(sub.uuid)).map((m) => [m.state, m.attempts]),
        [['delivered', 1]],
      );
      assert.equal(hook.requests.length, 1, 'the event received while disabled is never delivered');
    });
  });

  describeOn(backend, `receiving guards end to end (${backend.name})`, () => {
    const TOKEN = 'e2e-receive-token-0123456789';
    const MAX_BODY = 2048;
    let hook: HttpStub;
    const authorized = { authorization: `Bearer ${TOKEN}` };
    const count = async (table: 'events' | 'matches') =>
      Number(
        (
          await server.db.db
            .selectFrom(table)
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );

    before(async () => {
      hook = await startStub(reply(200));
    });
    const server = serverOn(
      backend,
      {
        NOTIFICATIONS_RECEIVE_TOKEN: TOKEN,
        NOTIFICATIONS_MAX_BODY: `${MAX_BODY}b`,
        NOTIFICATIONS_RETRY_DELAYS: RETRY_DELAYS,
        NOTIFICATIONS_TARGET_TIMEOUT: TARGET_TIMEOUT,
        NOTIFICATIONS_LEASE: '2s',
      },
      { open: true },
    );
    before(async () => {
      // Matches everything: whatever got logged would be routed and delivered.
      const created = await fetch(`${server.url}/eventmatch`, {
        method: 'POST',
        headers: json('guard'),
        body: JSON.stringify({ name: 'all', jsonpath: '$', target_url: hook.url }),
      });
      assert.equal(created.status, 200, await created.clone().text());
    });
    // Registered after serverOn's: the hook closes once the server has stopped.
    after(() => hook.close());

    it('answers 401 without the bearer token or with a wrong one', async () => {
      const cases: Array<Record<string, string>> = [
        {},
        { authorization: 'Bearer wrong-token' },
        { authorization: `Basic ${TOKEN}` },
        { authorization: `Bearer ${TOKEN}x` },
      ];
      for (const headers of cases) {
        const response = await receive(server, event('/guard', 'unauthorized'), headers);
        assert.equal(response.status, 401, JSON.stringify(headers));
        const body = (await response.json()) as { statusCode: number; message: string };
        assert.equal(body.statusCode, 401);
        assert.match(body.message, /bearer token/);
      }
    });

    it('answers 400 naming the attribute, 415 for a wrong media type or a content coding, 413 past NOTIFICATIONS_MAX_BODY', async () => {
      const missingType = JSON.stringify({ specversion: '1.0', id: 'bad-1', source: '/guard' });
      const bad = await receive(server, missingType, authorized);
      assert.equal(bad.status, 400);
      assert.match(((await bad.json()) as { message: string }).message, /^type: /);

      const badSource = await receive(server, JSON.stringify({ specversion: '1.0', id: 'bad-2', source: '', type: 't' }), authorized);
      assert.equal(badSource.status, 400);
      assert.match(((await badSource.json()) as { message: string }).message, /^source: /);

      const wrongType = await receive(server, event('/guard', 'text-1'), { ...authorized, 'content-type': 'text/plain' });
      assert.equal(wrongType.status, 415);
      assert.match(((await wrongType.json()) as { message: string }).message, /unsupported media type/);

      for (const coding of ['gzip', 'br', 'gzip, identity']) {
        const coded = await receive(server, event('/guard', `coded-${coding}`), { ...authorized, 'content-encoding': coding });
        assert.equal(coded.status, 415, coding);
        assert.equal(coded.headers.get('accept-encoding'), 'identity');
        assert.match(((await coded.json()) as { message: string }).message, /^content-encoding: /);
      }

      const large = JSON.stringify({ specversion: '1.0', id: 'large-1', source: '/guard', type: 't', data: 'x'.repeat(MAX_BODY) });
      const tooLarge = await receive(server, large, authorized);
      assert.equal(tooLarge.status, 413);
      assert.match(((await tooLarge.json()) as { message: string }).message, /NOTIFICATIONS_MAX_BODY/);
    });

    it('logged nothing for any rejected request: the events table is empty and nothing was delivered', async () => {
      assert.equal(await count('events'), 0);
      assert.equal(await count('matches'), 0);
      // With no match, there is nothing that could be delivered later.
      assert.equal(hook.requests.length, 0);
    });

    it('answers 200 with the bearer token, and routes the event', async () => {
      const response = await receive(server, event('/guard', 'with-token'), authorized);
      assert.equal(response.status, 200, await response.clone().text());
      assert.equal(((await response.json()) as { matches: number }).matches, 1);
      assert.equal(await count('events'), 1);
      await eventually(() => hook.requests.length === 1, 'the accepted event is delivered');
    });
  });
}
