/**
 * The shared NATS server on 127.0.0.1:4222 (JetStream, no auth), as a test uses it: a stream of
 * its own, with a random name, holding the subjects under a random prefix, and deleted when the
 * test ends. The server itself is never stopped or restarted. Where it does not answer, the
 * tests declared with `{ skip: NATS_SKIP }` are reported as skipped with the reason. The same
 * stream can be had on a server of the test's own that asks for a password (password-brokers.ts),
 * read by a client logged in with it.
 */
import { randomBytes } from 'node:crypto';
import type { TestContext } from 'node:test';
import { connect, type StoredMsg } from 'nats';
import { brokerSkip, mustAnswer } from './broker-available.js';
import { eventually } from './http-stub.js';
import type { PasswordBroker } from './password-brokers.js';

export const NATS_PORT = 4222;

/** Why the tests that need the NATS server cannot run here (it speaks first, with INFO); false when they can. */
export const NATS_SKIP = await brokerSkip({
  name: 'NATS',
  port: NATS_PORT,
  answer: 'INFO ',
  provide: 'apt-get install nats-server; nats-server -a 127.0.0.1 -p 4222 -js &',
});

export interface TestStream {
  /** A subject the stream holds: `<prefix>.<suffix>`. */
  subject(suffix?: string): string;
  /** A subject no stream holds. */
  unheldSubject(): string;
  /** Waits until the stream holds at least `count` messages, and returns them in order. */
  received(count: number, timeoutMs?: number): Promise<StoredMsg[]>;
  /** How many messages the stream holds now. */
  count(): Promise<number>;
}

/** A stream on the shared server, or on `server` (one of the test's own), logged in with its user and password. */
export async function natsStream(t: TestContext, server?: PasswordBroker): Promise<TestStream> {
  if (server === undefined) mustAnswer(NATS_SKIP, 'NATS_SKIP');
  const connection = await connect({
    servers: `127.0.0.1:${server?.port ?? NATS_PORT}`,
    ...(server === undefined ? {} : { user: server.username, pass: server.password }),
  });
  const manager = await connection.jetstreamManager();
  const suffix = randomBytes(6).toString('hex');
  const name = `svc-notifications-test-${suffix}`;
  const prefix = `svcntest${suffix}`;
  await manager.streams.add({ name, subjects: [`${prefix}.>`] });
  const cleanup = async () => {
    await manager.streams.delete(name);
    await connection.close();
  };
  if (server === undefined) t.after(cleanup);
  else server.whenStopping(cleanup);
  const count = async () => (await manager.streams.info(name)).state.messages;
  return {
    subject: (tail = 'events') => `${prefix}.${tail}`,
    unheldSubject: () => `svcntest-unheld${randomBytes(6).toString('hex')}.events`,
    count,
    async received(wanted, timeoutMs = 15_000) {
      await eventually(async () => (await count()) >= wanted, `${wanted} messages in stream ${name}`, timeoutMs);
      const messages: StoredMsg[] = [];
      for (let seq = 1; seq <= (await count()); seq++) messages.push(await manager.streams.getMessage(name, { seq }));
      return messages;
    },
  };
}
