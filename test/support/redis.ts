/**
 * The shared Redis on 127.0.0.1:6379 (no password for the default user), as a test uses it: its
 * own stream keys and ACL users, named with a random suffix and deleted when the test ends,
 * read back with XRANGE. Redis itself is never stopped or restarted. Where it does not answer,
 * the tests declared with `{ skip: REDIS_SKIP }` are reported as skipped with the reason.
 */
import { randomBytes } from 'node:crypto';
import type { TestContext } from 'node:test';
import { Redis } from 'ioredis';
import { brokerSkip, mustAnswer } from './broker-available.js';
import { eventually } from './http-stub.js';

export const REDIS_PORT = 6379;

/** Why the tests that need Redis cannot run here (it must answer PING without a login); false when they can. */
export const REDIS_SKIP = await brokerSkip({
  name: 'Redis',
  port: REDIS_PORT,
  hello: 'PING\r\n',
  answer: '+PONG',
  provide: 'apt-get install redis-server; redis-server --daemonize yes --bind 127.0.0.1',
});

export interface StreamEntry {
  readonly id: string;
  /** The entry's fields, in the order they were added. */
  readonly fields: Array<[string, Buffer]>;
  /** The value of a field, as UTF-8. */
  field(name: string): string | undefined;
}

export interface TestStream {
  readonly key: string;
  /** Every entry of the stream, in order. */
  entries(): Promise<StreamEntry[]>;
  /** Waits until the stream holds at least `count` entries, and returns them all. */
  received(count: number, timeoutMs?: number): Promise<StreamEntry[]>;
}

export interface TestRedis {
  /** A key of its own (ending with `suffix`), no stream yet (XADD creates it), deleted when the test ends. */
  stream(suffix?: string): TestStream;
  /** A key of its own holding a string: not a stream. */
  stringKey(): Promise<string>;
  /** An ACL user of its own, allowed everything on keys of `pattern`, deleted when the test ends. */
  user(password: string, pattern?: string): Promise<string>;
}

export async function testRedis(t: TestContext): Promise<TestRedis> {
  mustAnswer(REDIS_SKIP, 'REDIS_SKIP');
  const client = new Redis({ host: '127.0.0.1', port: REDIS_PORT, lazyConnect: true });
  await client.connect();
  const keys: string[] = [];
  const users: string[] = [];
  t.after(async () => {
    if (keys.length > 0) await client.del(...keys);
    for (const user of users) await client.call('ACL', 'DELUSER', user);
    await client.quit();
  });
  const unusedName = () => `svc-notifications-test-${randomBytes(6).toString('hex')}`;
  const entries = async (key: string): Promise<StreamEntry[]> =>
    (await client.xrangeBuffer(key, '-', '+')).map(([id, flat]) => {
      const fields: Array<[string, Buffer]> = [];
      for (let i = 0; i < flat.length; i += 2) fields.push([flat[i]!.toString('utf8'), flat[i + 1]!]);
      return { id: id.toString(), fields, field: (name) => fields.find(([n]) => n === name)?.[1].toString('utf8') };
    });
  return {
    stream(suffix = '') {
      const key = `${unusedName()}${suffix}`;
      keys.push(key);
      return {
        key,
        entries: () => entries(key),
        async received(count, timeoutMs = 15_000) {
          await eventually(async () => (await client.xlen(key)) >= count, `${count} entries in ${key}`, timeoutMs);
          return entries(key);
        },
      };
    },
    async stringKey() {
      const key = unusedName();
      keys.push(key);
      await client.set(key, 'not a stream');
      return key;
    },
    async user(password, pattern = 'svc-notifications-test-*') {
      const name = unusedName();
      users.push(name);
      await client.call('ACL', 'SETUSER', name, 'on', `>${password}`, `~${pattern}`, '+@all');
      return name;
    },
  };
}
