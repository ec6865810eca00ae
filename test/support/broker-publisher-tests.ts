/**
 * What the broker publisher's suites share (one a protocol, test/delivery/*-publisher*.test.ts):
 * the publisher and its requests, and the tests every protocol passes alike: nothing listening,
 * a peer that never speaks, the connection kept and opened again after a cut, and the broker
 * down then back. A TCP proxy in front of the shared broker stands for one that goes away; the
 * broker itself is never touched. Only the tests that reach the shared broker are skipped where
 * it does not answer.
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type Socket } from 'node:net';
import { it, type TestContext } from 'node:test';
import { BROKER_CONTENT_TYPE } from '../../src/delivery/broker-destination.js';
import { type BrokerClient, type BrokerRequest, createBrokerPublisher } from '../../src/delivery/broker-publisher.js';
import { addressGuard } from '../../src/net/address-guard.js';
import type { Auth } from '../../src/subscriptions/input.js';
import { refusedPort } from './processes.js';
import { startTcpProxy } from './tcp-proxy.js';

export const SECRET = `whsec_${randomBytes(32).toString('base64')}`;

export function publisher(t: TestContext, { deny = [] as string[], timeoutMs = 5_000 } = {}): BrokerClient {
  const client = createBrokerPublisher({ timeoutMs, guard: addressGuard({ allow: [], deny }) });
  t.after(() => client.close());
  return client;
}

export function request(
  url: string,
  { body = '{"specversion":"1.0","id":"1"}', auth = {} as Auth, id = randomUUID() } = {},
): BrokerRequest {
  return { url, auth, body, contentType: BROKER_CONTENT_TYPE, signing: { id, secrets: [SECRET] } };
}

export const confirmed = { error: null, permanent: false };
export const outcome = ({ error, permanent }: { error: string | null; permanent: boolean }) => ({ error, permanent });

/** A destination of the test's own, reached through the proxy on `proxyPort`. */
export interface ProxiedDestination {
  url: string;
  /** Waits until it holds at least `count` messages; resolves with how many it holds. */
  received(count: number): Promise<number>;
}

/** A suite's protocol, as the shared tests use it. */
export interface Protocol {
  /** How its peer is spoken of, and what the peer does with a message it keeps. */
  peer: 'broker' | 'server';
  kept: 'confirmed' | 'acknowledged' | 'added';
  /** The shared broker's port, which the tests' proxy forwards to. */
  port: number;
  /** Why the tests that reach the shared broker cannot run here (its support module's `*_SKIP`); false when they can. */
  skip: string | false;
  /** The URL of a destination at 127.0.0.1:`port`. */
  url(port: number): string;
  /** A destination of the test's own, through the proxy. */
  destination(t: TestContext, proxyPort: number): Promise<ProxiedDestination>;
  /** Credentials the peer accepts, other than none. */
  otherAuth(t: TestContext): Promise<Auth>;
  /** What a time-out says, when the protocol's client says it its own way. */
  timeoutError?: RegExp;
  /** Every message kept is there once (a cut may lose an answer, never make a message twice). */
  once?: boolean;
}

/** The tests every protocol passes alike, in the suite this is called in. */
export function connectionTests(protocol: Protocol): void {
  itIsLaterWhenNothingListens(protocol);
  itIsLaterWhenThePeerNeverSpeaks(protocol);
  itKeepsAConnectionAndOpensAnotherAfterACut(protocol);
  itIsLaterWhileDownAndKeptOnceBack(protocol);
}

function itIsLaterWhenNothingListens(protocol: Protocol): void {
  it('nothing listening: later (connection refused), never permanent', async (t) => {
    const port = await refusedPort();
    assert.deepEqual(outcome(await publisher(t).publish(request(protocol.url(port)))), { error: 'connection refused', permanent: false });
  });
}

function itIsLaterWhenThePeerNeverSpeaks(protocol: Protocol): void {
  it(`a ${protocol.peer} that accepts the connection and never speaks: later, within the time-out`, async (t) => {
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => void sockets.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    t.after(() => {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => silent.close(() => resolve()));
    });
    const port = (silent.address() as { port: number }).port;
    const url = protocol.url(port);
    const answer = await publisher(t, { timeoutMs: 300 }).publish(request(url));
    assert.equal(answer.permanent, false);
    if (protocol.timeoutError) assert.match(answer.error!, protocol.timeoutError);
    else assert.equal(answer.error, `time-out after 300 ms connecting to ${new URL(url).protocol}//127.0.0.1:${port}`);
    assert.ok(answer.durationMs < 1_000, `${answer.durationMs} ms`);
  });
}

function itKeepsAConnectionAndOpensAnotherAfterACut(protocol: Protocol): void {
  const name = `keeps one connection per ${protocol.peer} and credentials, and opens a new one after it is cut; nothing ${protocol.kept} is lost`;
  it(name, { skip: protocol.skip }, async (t) => {
    const proxy = await startTcpProxy(protocol.port);
    t.after(() => proxy.close());
    const { url, received } = await protocol.destination(t, proxy.port);
    const client = publisher(t);
    const first = await Promise.all(Array.from({ length: 20 }, () => client.publish(request(url))));
    for (const answer of first) assert.deepEqual(outcome(answer), confirmed);
    assert.equal(proxy.accepted(), 1, 'twenty publishes, one connection');

    proxy.cut();
    const answers = [];
    for (let i = 0; i < 20; i++) answers.push(await client.publish(request(url)));
    // The cut may be noticed by the first publish after it (later); then the connection is opened again.
    const failed = answers.filter((a) => a.error !== null);
    assert.ok(failed.length <= 1, JSON.stringify(failed));
    for (const answer of failed) assert.equal(answer.permanent, false);
    assert.equal(proxy.accepted(), 2, 'one new connection after the cut');
    const held = await received(40 - failed.length);
    if (protocol.once) assert.equal(held, 40 - failed.length, `each ${protocol.kept} once`);

    const other = await client.publish(request(url, { auth: await protocol.otherAuth(t) }));
    assert.deepEqual(outcome(other), confirmed);
    assert.equal(proxy.accepted(), 3, 'other credentials, another connection');
  });
}

function itIsLaterWhileDownAndKeptOnceBack(protocol: Protocol): void {
  const name = `a ${protocol.peer} that is down, then back: later while down, ${protocol.kept} once it is back`;
  it(name, { skip: protocol.skip }, async (t) => {
    const proxy = await startTcpProxy(protocol.port);
    t.after(() => proxy.close());
    const { url, received } = await protocol.destination(t, proxy.port);
    const client = publisher(t);
    assert.deepEqual(outcome(await client.publish(request(url))), confirmed);
    await proxy.stop();
    const down = [await client.publish(request(url)), await client.publish(request(url))];
    for (const answer of down) assert.equal(answer.permanent, false);
    assert.deepEqual(outcome(down[1]!), { error: 'connection refused', permanent: false });
    await proxy.start();
    assert.deepEqual(outcome(await client.publish(request(url))), confirmed);
    await received(2);
  });
}
