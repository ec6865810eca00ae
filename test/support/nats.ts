/**
 * The shared NATS server on 127.0.0.1:4222 (JetStream, no auth), as a test uses it: a stream of
 * its own, with a random name, holding the subjects under a random prefix, and deleted when the
 * test ends. The server itself is never stopped or restarted.
 */
import { randomBytes } from 'node:crypto';
import type { TestContext } from 'node:test';
import { connect, type StoredMsg } from 'nats';
import { eventually } from './http-stub.js';

export const NATS_PORT = 4222;

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

export async function natsStream(t: TestContext): Promise<TestStream> {
  const connection = await connect({ servers: `127.0.0.1:${NATS_PORT}` });
  const manager = await connection.jetstreamManager();
  const suffix = randomBytes(6).toString('hex');
  const name = `svc-notifications-test-${suffix}`;
  const prefix = `svcntest${suffix}`;
  await manager.streams.add({ name, subjects: [`${prefix}.>`] });
  t.after(async () => {
    await manager.streams.delete(name);
    await connection.close();
  });
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
