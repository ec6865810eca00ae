/**
 * MQTT destinations end to end: the server as a process, the shared Mosquitto on 127.0.0.1:1883
 * (received by a real subscriber at QoS 1 on the test's own topic, through a TCP proxy where the
 * test cuts or stops it), an HTTP target beside it, on every database. The broker itself is never
 * stopped or restarted.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, it, type TestContext } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { describeOn, type TestDatabase, testBackends } from '../support/database.js';
import { eventually, type HttpStub, startStub } from '../support/http-stub.js';
import { MOSQUITTO_PORT, mqttTopic } from '../support/mosquitto.js';
import { type RunningServer, runCli, startServer } from '../support/processes.js';
import { startTcpProxy } from '../support/tcp-proxy.js';

const USER = { 'http-remote-user': 'alice' };

for (const backend of testBackends()) {
  describeOn(backend, `broker destinations: MQTT (${backend.name})`, () => {
    let database: TestDatabase;
    let server: RunningServer;
    const stubs: HttpStub[] = [];

    before(async () => {
      database = await backend.create();
      assert.equal((await runCli(['--database-url', database.url, 'dbsync'])).code, 0);
      server = await startServer({
        NOTIFICATIONS_DATABASE_URL: database.url,
        NOTIFICATIONS_RETRY_DELAYS: '200ms,200ms,200ms',
        NOTIFICATIONS_TARGET_TIMEOUT: '2s',
        NOTIFICATIONS_LEASE: '5s',
        NOTIFICATIONS_SECRET_KEY: randomBytes(32).toString('base64'),
        NOTIFICATIONS_LOG_LEVEL: 'warn',
      });
    });
    after(async () => {
      assert.equal(await server?.stop(), 0);
      for (const stub of stubs) await stub.close();
      await database?.cleanup();
    });

    async function subscribe(targetUrl: string, source: string, fields: object = {}): Promise<{ uuid: string; secret: string }> {
      const created = await fetch(`${server.url}/eventmatch`, {
        method: 'POST',
        headers: { ...USER, 'content-type': 'application/json' },
        body: JSON.stringify({ name: source, jsonpath: `$[?$.source == '${source}']`, target_url: targetUrl, ...fields }),
      });
      assert.equal(created.status, 200, await created.clone().text());
      const { uuid } = (await created.json()) as { uuid: string };
      const read = await fetch(`${server.url}/eventmatch/${uuid}/secret`, { headers: USER });
      return { uuid, secret: ((await read.json()) as { secret: string }).secret };
    }

    async function record(uuid: string): Promise<{ disabled: string | null; error: string | null }> {
      return (await (await fetch(`${server.url}/eventmatch/${uuid}`, { headers: USER })).json()) as {
        disabled: string | null;
        error: string | null;
      };
    }

    async function send(body: string, expectedMatches?: number): Promise<void> {
      const answer = await fetch(`${server.url}/receive`, {
        method: 'POST',
        headers: { 'content-type': 'application/cloudevents+json' },
        body,
      });
      assert.equal(answer.status, 200, await answer.clone().text());
      if (expectedMatches !== undefined) assert.equal(((await answer.json()) as { matches: number }).matches, expectedMatches);
    }

    const event = (source: string, id: string) => JSON.stringify({ specversion: '1.0', id, source, type: 't' });

    async function stub(): Promise<HttpStub> {
      const started = await startStub();
      stubs.push(started);
      return started;
    }

    it('publishes each event as HTTP gets it: exact bytes, content type, signed with the subscription secret; recorded delivered', async (t: TestContext) => {
      const topic = await mqttTopic(t);
      const http = await stub();
      const source = '/exact';
      const withTag = { extensions: { tag: 'é✓' } };
      const mqtt = await subscribe(`mqtt://127.0.0.1:${MOSQUITTO_PORT}/${topic.name}`, source, {
        ...withTag,
        auth: { type: 'basic', basic: { username: 'notifications', password: 'unused-here' } },
      });
      await subscribe(http.url, source, withTag);
      const body = `{ "specversion":"1.0" , "type":"t", "source":"${source}", "id":"x1", "data": {"z": 1.50, "a": "\\u00e9 🎉"} }`;
      await send(body, 2);
      await topic.received(1);
      await eventually(() => http.requests.length === 1, 'the HTTP target has it');

      const [{ payload, packet }] = topic.messages as [(typeof topic.messages)[0]];
      assert.equal(payload.toString('utf8'), http.requests[0]!.body, 'with its extensions, the very body HTTP gets');
      assert.ok(payload.equals(Buffer.from(http.requests[0]!.body, 'utf8')), 'the exact bytes');
      assert.equal(packet.qos, 1);
      assert.equal(packet.properties?.contentType, http.requests[0]!.headers['content-type']);
      const headers = packet.properties?.userProperties as Record<string, string>;
      assert.doesNotThrow(() => new Webhook(mqtt.secret).verify(payload.toString('utf8'), headers));

      type History = Array<{ elm: string; state: string; target: number | null; attempts: Array<{ status: number | null }> }>;
      const read = async () =>
        (await (await fetch(`${server.url}/eventmatch/${mqtt.uuid}/deliveries`, { headers: USER })).json()) as History;
      await eventually(async () => (await read())[0]?.state === 'delivered', 'recorded delivered');
      const [delivery] = await read();
      assert.equal(headers['webhook-id'], delivery!.elm);
      assert.deepEqual([delivery!.target, delivery!.attempts.map((a) => a.status)], [null, [null]]);
    });

    it('a topic with a wildcard is refused at the write, naming body.target_url', async () => {
      const answer = await fetch(`${server.url}/eventmatch`, {
        method: 'POST',
        headers: { ...USER, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'w', jsonpath: '$', target_url: 'mqtt://127.0.0.1/files/%23' }),
      });
      assert.equal(answer.status, 400);
      assert.match(((await answer.json()) as { message: string }).message, /^body\.target_url: the topic "files\/#" has a wildcard/);
    });

    it('connections cut mid-run are opened again, and every event is delivered at least once', async (t: TestContext) => {
      const EVENTS = 300;
      const topic = await mqttTopic(t);
      const proxy = await startTcpProxy(MOSQUITTO_PORT);
      t.after(() => proxy.close());
      await subscribe(`mqtt://127.0.0.1:${proxy.port}/${topic.name}`, '/cut');
      for (let i = 0; i < EVENTS; i++) {
        await send(event('/cut', `c${i}`));
        if (i % 60 === 30) proxy.cut();
      }
      const ids = () => new Set(topic.messages.map((m) => (JSON.parse(m.payload.toString('utf8')) as { id: string }).id));
      await eventually(() => ids().size === EVENTS, `all ${EVENTS} events on the topic`, 60_000);
      assert.ok(proxy.accepted() >= 2, `connections opened again after the cuts (${proxy.accepted()})`);
      assert.ok(proxy.accepted() <= 12, `a connection kept and reused, not one per delivery (${proxy.accepted()})`);
    });

    it('a broker that is down: its lane down, retried, disabled at the end of the schedule; an HTTP subscription meanwhile is served', async (t: TestContext) => {
      const EVENTS = 3;
      const proxy = await startTcpProxy(MOSQUITTO_PORT);
      t.after(() => proxy.close());
      await proxy.stop();
      const http = await stub();
      const down = await subscribe(`mqtt://127.0.0.1:${proxy.port}/down`, '/down');
      await subscribe(http.url, '/down');
      for (let i = 0; i < EVENTS; i++) await send(event('/down', `d${i}`), 2);
      await eventually(() => http.requests.length === EVENTS, 'the HTTP target has every event');
      const downLanes = async () => /^notifications_target_origins_down 1$/m.test(await (await fetch(`${server.url}/metrics`)).text());
      await eventually(downLanes, 'the broker lane is down');
      await eventually(async () => (await record(down.uuid)).disabled !== null, 'the broker subscription disabled', 30_000);
      assert.equal((await record(down.uuid)).error, 'gave up after 4 attempts: connection refused');
    });
  });
}
