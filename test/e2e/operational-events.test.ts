/**
 * Operational events end to end: the built server as a process, targets and a policy service as
 * real HTTP servers on 127.0.0.1, on every database. The owner of a subscription whose target
 * died learns it from the service's own events, delivered to another of their subscriptions
 * that asks for them (`notices`); their subscriptions that do not (a pipeline on `$` or
 * `$.data`, push or pull) never receive them, nobody else sees them, the policy service is never
 * asked about them, and a failure to deliver them tells of nothing more (no loops).
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { describeOn, testBackends } from '../support/database.js';
import { eventually, type HttpStub, reply, startStub, type StubRequest } from '../support/http-stub.js';
import { type RunningServer, runCli } from '../support/processes.js';
import { pull } from '../support/pull-client.js';
import { serverOn } from '../support/server-on.js';

/** Seven tries in all: the run of failures reaches five while the subscription is still enabled. */
const RETRY_DELAYS = '50ms,50ms,50ms,50ms,50ms,50ms';
const SOURCE = '/svc-notifications';
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}$/;

interface Subscription {
  uuid: string;
  name: string;
  disabled: string | null;
  error: string | null;
}

interface CloudEvent {
  specversion: string;
  id: string;
  source: string;
  type: string;
  subject: string;
  time: string;
  data: Record<string, unknown>;
}

const json = (user: string) => ({ 'content-type': 'application/json', 'http-remote-user': user });

/** A push subscription to `targetUrl`, or with `extra` e.g. `{ notices: true }`, or a pull one (`{ delivery: 'pull' }`). */
async function subscribe(
  server: RunningServer,
  user: string,
  name: string,
  jsonpath: string,
  targetUrl: string | null,
  extra: Record<string, unknown> = {},
): Promise<Subscription> {
  const response = await fetch(`${server.url}/eventmatch`, {
    method: 'POST',
    headers: json(user),
    body: JSON.stringify({ name, jsonpath, ...(targetUrl === null ? {} : { target_url: targetUrl }), ...extra }),
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

function receive(server: RunningServer, event: Record<string, unknown>): Promise<Response> {
  return fetch(`${server.url}/receive`, {
    method: 'POST',
    headers: { 'content-type': 'application/cloudevents+json' },
    body: JSON.stringify({ specversion: '1.0', type: 'org.example.data', data: { n: 1 }, ...event }),
  });
}

const operational = (requests: readonly StubRequest[]) =>
  requests.map((r) => JSON.parse(r.body) as CloudEvent).filter((event) => event.source === SOURCE);

for (const backend of testBackends()) {
  describeOn(backend, `operational events (${backend.name})`, () => {
    let policy: HttpStub;
    before(async () => {
      // A policy that would deny every operational event: it must never be asked about one.
      policy = await startStub((request, response) => {
        response.writeHead((JSON.parse(request.body) as CloudEvent).source === SOURCE ? 403 : 200).end();
      });
    });
    const server = serverOn(
      backend,
      () => ({ NOTIFICATIONS_POLICY_URL: policy.url, NOTIFICATIONS_RETRY_DELAYS: RETRY_DELAYS, NOTIFICATIONS_TARGET_TIMEOUT: '1s' }),
      { open: true },
    );
    const stubs: HttpStub[] = [];
    const target = async (status = 200) => {
      const stub = await startStub(reply(status));
      stubs.push(stub);
      return stub;
    };
    const operationalEventsLogged = () => server.db.db.selectFrom('events').select(['type', 'body']).where('source', '=', SOURCE).execute();

    // Registered after serverOn's: the stubs close once the server has stopped.
    after(async () => {
      for (const stub of [policy, ...stubs]) await stub.close();
    });

    it('tells the owner of a dead target, through another of their subscriptions: failing once, then disabled; nobody else sees it', async () => {
      const dead = await target(503);
      const ops = await target(204);
      const bobs = await target(204);
      const died = await subscribe(server, 'alice', 'pipeline', "$[?$.source == '/e2e/died']", dead.url);
      const told = await subscribe(server, 'alice', 'alerts', "$[?$.source == '/svc-notifications']", ops.url, { notices: true });
      // Bob matches everything and asks for notices: he must never see Alice's operational events.
      await subscribe(server, 'bob', 'everything', '$', bobs.url, { notices: true });

      assert.equal((await receive(server, { id: 'died-1', source: '/e2e/died' })).status, 200);
      await eventually(() => operational(ops.requests).length === 2, 'failing and disabled delivered to alerts');
      const record = await readSubscription(server, 'alice', died.uuid);
      assert.notEqual(record.disabled, null);

      const [failing, disabled] = operational(ops.requests);
      assert.equal(failing!.type, 'svc.notifications.subscription.failing');
      assert.deepEqual(failing!.data, { subscription: died.uuid, name: 'pipeline', error: failing!.data.error, failures: 5 });
      assert.match(String(failing!.data.error), /503/);
      assert.equal(disabled!.type, 'svc.notifications.subscription.disabled');
      assert.deepEqual(disabled!.data, { subscription: died.uuid, name: 'pipeline', error: record.error, disabled: record.disabled });
      assert.match(String(disabled!.data.disabled), TIMESTAMP);
      for (const event of [failing!, disabled!]) {
        assert.equal(event.specversion, '1.0');
        assert.equal(event.subject, died.uuid);
        assert.match(event.time, /Z$/);
      }
      // Delivered as any event: signed, with the subscription's history.
      for (const request of ops.requests) assert.match(String(request.headers['webhook-signature']), /^v1,/);
      // The target may have answered before the settlement committed.
      const history = async () =>
        (await (
          await fetch(`${server.url}/eventmatch/${told.uuid}/deliveries`, { headers: { 'http-remote-user': 'alice' } })
        ).json()) as Array<{ state: string; policy: number | null; event: { source: string } }>;
      await eventually(async () => (await history()).every((d) => d.state === 'delivered'), 'both recorded delivered');
      const deliveries = await history();
      assert.deepEqual(
        deliveries.map((d) => [d.state, d.policy, d.event.source]),
        [
          ['delivered', null, SOURCE],
          ['delivered', null, SOURCE],
        ],
      );

      // Never shown to anyone else, and the policy service was never asked about them.
      assert.deepEqual(operational(bobs.requests), []);
      assert.deepEqual(operational(policy.requests), []);
      assert.equal(bobs.requests.length, 1, "Bob's $ got Alice's data event, nothing more");

      // Enabled again by its owner: told too, and its failures start afresh.
      await put(server, 'alice', died.uuid, { disabled: null });
      await eventually(() => operational(ops.requests).length === 3, 'enabled delivered to alerts');
      const enabled = operational(ops.requests)[2]!;
      assert.equal(enabled.type, 'svc.notifications.subscription.enabled');
      assert.deepEqual(enabled.data, { subscription: died.uuid, name: 'pipeline' });
      assert.equal(
        (await server.db.db.selectFrom('failure_runs').selectAll().where('subscription_uuid', '=', died.uuid).execute()).length,
        0,
      );

      // Routed again (eventretry) and retried (one delivery): still the owner's alone, still not asked about.
      const logged = await server.db.db.selectFrom('events').select('uuid').where('event_id', '=', enabled.id).executeTakeFirstOrThrow();
      const again = await runCli(['--database-url', server.database.url, 'eventretry', logged.uuid]);
      assert.equal(again.code, 0, again.stderr);
      assert.equal(again.stdout.trim().split('\n').length, 1, 'one new match: the alerts subscription');
      await eventually(() => operational(ops.requests).length === 4, 'the enabled event delivered again');
      const [latest] = (await (
        await fetch(`${server.url}/eventmatch/${told.uuid}/deliveries`, { headers: { 'http-remote-user': 'alice' } })
      ).json()) as Array<{ elm: string }>;
      const retried = await fetch(`${server.url}/eventmatch/${told.uuid}/deliveries/${latest!.elm}/retry`, {
        method: 'POST',
        headers: { 'http-remote-user': 'alice' },
      });
      assert.equal(retried.status, 202, await retried.clone().text());
      await eventually(() => operational(ops.requests).length === 5, 'the retried delivery sent');
      assert.deepEqual(operational(bobs.requests), []);
      assert.deepEqual(operational(policy.requests), []);
    });

    it('no loops: an operational subscription failing on an operational event tells of nothing more', async () => {
      const dead = await target(410);
      const deadOps = await target(410);
      const died = await subscribe(server, 'carol', 'pipeline', "$[?$.source == '/e2e/loop']", dead.url);
      const ops = await subscribe(server, 'carol', 'alerts', "$[?$.type == 'svc.notifications.subscription.disabled']", deadOps.url, {
        notices: true,
      });

      assert.equal((await receive(server, { id: 'loop-1', source: '/e2e/loop' })).status, 200);
      // Its disabling would be told in the transaction that disables it: once it is disabled, all is said.
      await eventually(
        async () => (await readSubscription(server, 'carol', ops.uuid)).disabled !== null,
        'the alerts subscription is disabled',
      );
      const about = (await operationalEventsLogged())
        .map((row) => JSON.parse(row.body) as CloudEvent)
        .filter((event) => [died.uuid, ops.uuid].includes(event.subject));
      assert.deepEqual(
        about.map((event) => [event.type, event.subject]),
        [['svc.notifications.subscription.disabled', died.uuid]],
      );
      assert.equal(deadOps.requests.length, 1, 'the one disabled event was tried once (410: no retry)');
    });

    it("reaches only the owner's subscriptions with notices: pipelines on $ and $.data, push or pull, receive data events alone", async () => {
      const dead = await target(410);
      const everything = await target(204);
      const data = await target(204);
      const alerts = await target(204);
      const died = await subscribe(server, 'dave', 'pipeline', "$[?$.source == '/e2e/quiet']", dead.url);
      await subscribe(server, 'dave', 'everything', '$', everything.url);
      const pushData = await subscribe(server, 'dave', 'data', '$.data', data.url);
      const pullAll = await subscribe(server, 'dave', 'reader', '$', null, { delivery: 'pull' });
      const pullNotices = await subscribe(server, 'dave', 'notices reader', '$', null, { delivery: 'pull', notices: true });
      const told = await subscribe(server, 'dave', 'alerts', '$', alerts.url, { notices: true });

      assert.equal((await receive(server, { id: 'quiet-1', source: '/e2e/quiet' })).status, 200);
      // 410: no retry; disabled at once, and the event telling of it is written with its matches.
      await eventually(() => operational(alerts.requests).length === 1, 'the disabled event delivered to the subscription with notices');
      const [disabled] = operational(alerts.requests);
      assert.equal(disabled!.type, 'svc.notifications.subscription.disabled');
      assert.equal(disabled!.subject, died.uuid);
      const readAll = async (uuid: string) => (await pull(server, 'dave', uuid)).events.map((e) => e.event as unknown as CloudEvent);
      await eventually(
        async () => (await readAll(pullNotices.uuid)).length === 2,
        'the notices reader reads the data event and the notice',
      );
      assert.deepEqual((await readAll(pullNotices.uuid)).map((event) => event.source).sort(), ['/e2e/quiet', SOURCE]);

      // The notice's match rows were written with it, in one transaction: these are all there will be.
      const logged = await server.db.db.selectFrom('events').select('uuid').where('event_id', '=', disabled!.id).executeTakeFirstOrThrow();
      const matched = await server.db.db.selectFrom('matches').select('subscription_uuid').where('event_uuid', '=', logged.uuid).execute();
      assert.deepEqual(matched.map((m) => m.subscription_uuid).sort(), [pullNotices.uuid, told.uuid].sort());

      // The pipelines got the data event, and nothing of the service's.
      await eventually(() => everything.requests.length === 1 && data.requests.length === 1, 'the data event delivered to $ and $.data');
      for (const stub of [everything, data]) {
        assert.deepEqual(
          stub.requests.map((r) => (JSON.parse(r.body) as CloudEvent).id),
          ['quiet-1'],
        );
      }
      await eventually(async () => (await readAll(pullAll.uuid)).length === 1, 'the data event readable on the $ reader');
      assert.deepEqual(
        (await readAll(pullAll.uuid)).map((event) => [event.source, event.id]),
        [['/e2e/quiet', 'quiet-1']],
      );

      // Asking for notices later (a PUT of the flag alone): the next notice reaches it.
      await put(server, 'dave', pushData.uuid, { notices: true });
      await put(server, 'dave', died.uuid, { disabled: null });
      await eventually(() => operational(data.requests).length === 1, 'the enabled event delivered to $.data, now with notices');
      assert.equal(operational(data.requests)[0]!.type, 'svc.notifications.subscription.enabled');
      await eventually(() => operational(alerts.requests).length === 2, 'and to alerts');
      const enabled = await server.db.db
        .selectFrom('events')
        .select('uuid')
        .where('event_id', '=', operational(alerts.requests)[1]!.id)
        .executeTakeFirstOrThrow();
      const enabledMatches = await server.db.db
        .selectFrom('matches')
        .select('subscription_uuid')
        .where('event_uuid', '=', enabled.uuid)
        .execute();
      assert.deepEqual(enabledMatches.map((m) => m.subscription_uuid).sort(), [pushData.uuid, pullNotices.uuid, told.uuid].sort());
      assert.deepEqual(operational(everything.requests), []);
    });

    it("refuses an event from the service's own source at /receive, naming the attribute", async () => {
      const response = await receive(server, { id: 'forged-1', source: SOURCE, type: 'svc.notifications.subscription.disabled' });
      assert.equal(response.status, 400);
      assert.match(((await response.json()) as { message: string }).message, /^source: .*\/svc-notifications/);
      assert.equal((await server.db.db.selectFrom('events').select('uuid').where('event_id', '=', 'forged-1').execute()).length, 0);
    });
  });
}
