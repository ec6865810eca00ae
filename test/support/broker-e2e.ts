/**
 * What the broker destinations' end-to-end suites share (one suite a broker, in
 * test/e2e/broker-delivery*.test.ts): the server as a process on the suite's database, with a
 * short retry schedule and sealed credentials; its API as a subscriber uses it; and the two
 * tests every broker passes alike, through a TCP proxy in front of the shared broker (which is
 * never stopped or restarted): connections cut mid-run (skipped where the broker does not
 * answer), and the broker down (which never reaches it).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, it, type TestContext } from 'node:test';
import type { TestBackend, TestDatabase } from './database.js';
import { eventually, type HttpStub, startStub } from './http-stub.js';
import { refusedPort, type RunningServer } from './processes.js';
import { serverOn } from './server-on.js';
import { startTcpProxy } from './tcp-proxy.js';

export const USER = { 'http-remote-user': 'alice' };

/** An event as a producer writes it (its own spacing, order and escapes): delivered, it must be these very bytes. */
export const exactBody = (source: string) =>
  `{ "specversion":"1.0" , "type":"t", "source":"${source}", "id":"x1", "data": {"z": 1.50, "a": "\\u00e9 🎉"} }`;

export const event = (source: string, id: string) => JSON.stringify({ specversion: '1.0', id, source, type: 't' });

interface Subscription {
  uuid: string;
  secret: string;
}

interface Stored {
  disabled: string | null;
  error: string | null;
}

type History = Array<{
  elm: string;
  state: string;
  target: number | null;
  attempts: Array<{ status: number | null; error: string | null }>;
}>;

export interface BrokerScene {
  readonly database: TestDatabase;
  readonly server: RunningServer;
  /** A subscription of alice's to the events from `source`, with its signing secret. */
  subscribe(targetUrl: string, source: string, fields?: object): Promise<Subscription>;
  record(uuid: string): Promise<Stored>;
  /** Receives `body`, which must be answered 200 (with `expectedMatches` matches when given). */
  send(body: string, expectedMatches?: number): Promise<void>;
  /** The subscription's deliveries once the newest is recorded delivered. */
  delivered(uuid: string): Promise<History>;
  /** The subscription's deliveries as they are now, newest first. */
  history(uuid: string): Promise<History>;
  /** An HTTP target, closed with the suite. */
  stub(): Promise<HttpStub>;
}

/** Starts the server for the suite it is called in (in a `describe`), and stops it after. */
export function brokerScene(backend: TestBackend): BrokerScene {
  const server = serverOn(backend, {
    NOTIFICATIONS_RETRY_DELAYS: '200ms,200ms,200ms',
    NOTIFICATIONS_TARGET_TIMEOUT: '2s',
    NOTIFICATIONS_LEASE: '5s',
    // Credentials are sealed at rest: the outbound thread gets them opened.
    NOTIFICATIONS_SECRET_KEY: randomBytes(32).toString('base64'),
    NOTIFICATIONS_LOG_LEVEL: 'warn',
  });
  const stubs: HttpStub[] = [];
  // Registered after serverOn's, which stopped the server: stop() again gives its exit code.
  after(async () => {
    assert.equal(await server.stop(), 0);
    for (const stub of stubs) await stub.close();
  });

  const record = async (uuid: string) => (await (await fetch(`${server.url}/eventmatch/${uuid}`, { headers: USER })).json()) as Stored;
  const deliveries = async (uuid: string) =>
    (await (await fetch(`${server.url}/eventmatch/${uuid}/deliveries`, { headers: USER })).json()) as History;

  return {
    get database() {
      return server.database;
    },
    get server() {
      return server;
    },
    subscribe: async (targetUrl, source, fields = {}) => {
      const created = await fetch(`${server.url}/eventmatch`, {
        method: 'POST',
        headers: { ...USER, 'content-type': 'application/json' },
        body: JSON.stringify({ name: source, jsonpath: `$[?$.source == '${source}']`, target_url: targetUrl, ...fields }),
      });
      assert.equal(created.status, 200, await created.clone().text());
      const { uuid } = (await created.json()) as { uuid: string };
      const read = await fetch(`${server.url}/eventmatch/${uuid}/secret`, { headers: USER });
      return { uuid, secret: ((await read.json()) as { secret: string }).secret };
    },
    record,
    send: async (body, expectedMatches) => {
      const answer = await fetch(`${server.url}/receive`, {
        method: 'POST',
        headers: { 'content-type': 'application/cloudevents+json' },
        body,
      });
      assert.equal(answer.status, 200, await answer.clone().text());
      if (expectedMatches !== undefined) assert.equal(((await answer.json()) as { matches: number }).matches, expectedMatches);
    },
    delivered: async (uuid) => {
      // The broker's consumer may have the message before the server has its confirmation recorded.
      await eventually(async () => (await deliveries(uuid))[0]?.state === 'delivered', 'recorded delivered');
      return deliveries(uuid);
    },
    history: deliveries,
    stub: async () => {
      const started = await startStub();
      stubs.push(started);
      return started;
    },
  };
}

/** Where the cut test's events go: through the proxy on `proxyPort`. */
export interface CutDestination {
  url: string;
  /** Waits until the broker holds (or its consumer has had) at least `count` messages; resolves with all their bodies, in order. */
  received(count: number, timeoutMs?: number): Promise<string[]>;
}

/**
 * Cuts the proxy's connections every 60 events while 300 are sent: every event arrives, at
 * least once (`once`: exactly once, for a broker that drops the duplicates), and the
 * connections were opened again, not one per delivery. `skip`: the broker's support module's.
 */
export function itReconnectsAfterCuts(
  scene: BrokerScene,
  brokerPort: number,
  destination: (t: TestContext, proxyPort: number) => Promise<CutDestination>,
  { once = false, skip }: { once?: boolean; skip: string | false },
): void {
  it(`connections cut mid-run are opened again, and every event is delivered ${once ? 'once' : 'at least once'}`, { skip }, async (t) => {
    const EVENTS = 300;
    const proxy = await startTcpProxy(brokerPort);
    t.after(() => proxy.close());
    const { url, received } = await destination(t, proxy.port);
    await scene.subscribe(url, '/cut');
    for (let i = 0; i < EVENTS; i++) {
      await scene.send(event('/cut', `c${i}`));
      // Cut while deliveries are in flight, as a broker restart or a network cut would.
      if (i % 60 === 30) proxy.cut();
    }
    // As many messages first; then, since some may be sent twice, every event among them.
    await received(EVENTS, 60_000);
    const ids = async () => new Set((await received(EVENTS)).map((body) => (JSON.parse(body) as { id: string }).id));
    await eventually(async () => (await ids()).size === EVENTS, `all ${EVENTS} events at the broker`, 60_000);
    if (once) assert.equal((await received(EVENTS)).length, EVENTS, 'each once');
    assert.ok(proxy.accepted() >= 2, `connections opened again after the cuts (${proxy.accepted()})`);
    assert.ok(proxy.accepted() <= 12, `a connection kept and reused, not one per delivery (${proxy.accepted()})`);
  });
}

/**
 * The broker down (its address refusing connections): its lane goes down, its deliveries are
 * retried and the subscription is disabled at the end of the schedule, while an HTTP
 * subscription to the same events is served. `name`: the broker as the test's messages say it.
 */
export function itSurvivesTheBrokerDown(scene: BrokerScene, name: string, url: (port: number) => string): void {
  it(`${name} down: its lane down, retried, disabled at the end of the schedule; an HTTP subscription meanwhile is served`, async () => {
    // Few: a down lane is probed once a second, one row at a time (pacing is measured in test/delivery/broker-runner.test.ts).
    const EVENTS = 3;
    const http = await scene.stub();
    const down = await scene.subscribe(url(await refusedPort()), '/down');
    await scene.subscribe(http.url, '/down');
    for (let i = 0; i < EVENTS; i++) await scene.send(event('/down', `d${i}`), 2);
    await eventually(() => http.requests.length === EVENTS, 'the HTTP target has every event');
    const downLanes = async () => /^notifications_target_origins_down 1$/m.test(await (await fetch(`${scene.server.url}/metrics`)).text());
    await eventually(downLanes, `the ${name} lane is down`);
    await eventually(async () => (await scene.record(down.uuid)).disabled !== null, `the ${name} subscription disabled`, 30_000);
    assert.equal((await scene.record(down.uuid)).error, 'gave up after 4 attempts: connection refused');
  });
}
