/**
 * The database failing under a running server, for real: its PostgreSQL connections terminated
 * (what a restart, a failover or an idle time-out does), all its database traffic held for
 * seconds (a partition), its SQLite file locked by another process. The server lives through
 * each: it answers 503 with Retry-After within NOTIFICATIONS_DATABASE_TIMEOUT while the database
 * does not answer, never a 500 and never later, and afterwards delivers everything it answered 200.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { createPostgres, createSqlite, describeOn, POSTGRES, POSTGRES_TEST_URL } from '../support/database.js';
import { startDatabaseProxy } from '../support/database-proxy.js';
import { eventually, type HttpStub, startStub } from '../support/http-stub.js';
import { type RunningServer, runCli, startServer } from '../support/processes.js';

const USER = { 'http-remote-user': 'alice' };
const JSON_BODY = { 'content-type': 'application/json' };

async function subscribe(server: RunningServer, source: string, targetUrl: string): Promise<string> {
  const response = await fetch(`${server.url}/eventmatch`, {
    method: 'POST',
    headers: { ...USER, ...JSON_BODY },
    body: JSON.stringify({ name: source, jsonpath: `$[?$.source == '${source}']`, target_url: targetUrl }),
  });
  assert.equal(response.status, 200, await response.clone().text());
  return ((await response.json()) as { uuid: string }).uuid;
}

function receive(server: RunningServer, source: string, id: string): Promise<Response> {
  return fetch(`${server.url}/receive`, {
    method: 'POST',
    headers: { 'content-type': 'application/cloudevents+json' },
    body: JSON.stringify({ specversion: '1.0', id, source, type: 'org.example.fault' }),
    signal: AbortSignal.timeout(30_000),
  });
}

const delivered = (target: HttpStub) => new Set(target.requests.map((r) => (JSON.parse(r.body) as { id: string }).id));

/** An answer while the database is away: 503 with Retry-After, within the time-out and a margin. */
async function assertUnavailable(request: () => Promise<Response>, timeoutMs: number, what: string): Promise<void> {
  const started = performance.now();
  const response = await request();
  const elapsed = performance.now() - started;
  const body = (await response.json()) as { statusCode: number; code: string; message: string };
  assert.equal(response.status, 503, `${what}: ${JSON.stringify(body)}`);
  assert.ok(Number(response.headers.get('retry-after')) >= 1, `${what}: Retry-After ${response.headers.get('retry-after')}`);
  assert.match(body.message, /^database: unavailable, or no answer within/);
  assert.equal(body.code, 'DATABASE_UNAVAILABLE', what);
  assert.ok(elapsed < timeoutMs + 1_500, `${what}: answered after ${elapsed.toFixed(0)} ms`);
}

describeOn(POSTGRES, 'PostgreSQL connections terminated under a running server', () => {
  it('lives, answers, listens again and sees a subscription made on another instance meanwhile', async () => {
    const database = await createPostgres(POSTGRES_TEST_URL!);
    const target = await startStub();
    const admin = new pg.Client({ connectionString: POSTGRES_TEST_URL });
    await admin.connect();
    try {
      assert.equal((await runCli(['--database-url', database.url, 'dbsync'])).code, 0);
      const env = { NOTIFICATIONS_DATABASE_URL: database.url, NOTIFICATIONS_LOG_LEVEL: 'info' };
      const [victim, other] = [await startServer(env), await startServer(env)];
      try {
        await eventually(() => victim.logs().includes('listening for subscription changes'), 'the victim listens');
        await subscribe(other, '/before', target.url);
        // A new id each try: an event received before the victim heard of the subscription is
        // logged with no match, and sending it again only answers that duplicate.
        let matchedId = '';
        await eventually(
          async () => {
            const id = `b-${Date.now()}`;
            const matched = ((await (await receive(victim, '/before', id)).json()) as { matches: number }).matches === 1;
            if (matched) matchedId = id;
            return matched;
          },
          'the victim matches the first subscription',
          5_000,
        );
        const backends = async () =>
          (
            await admin.query<{ pid: number }>(`select pid from pg_stat_activity where application_name in ($1, $2)`, [
              `svc-notifications ${victim.process.pid}`,
              `svc-notifications listener ${victim.process.pid}`,
            ])
          ).rows.map((r) => r.pid);
        const killed = await backends();
        assert.ok(killed.length >= 2, `the victim's pooled and listening connections: ${killed.length}`);
        await admin.query('select pg_terminate_backend(pid) from unnest($1::int[]) as pid', [killed]);
        // Made while the victim was not listening: it hears of it only by reloading.
        await subscribe(other, '/during', target.url);

        await eventually(
          async () => {
            const response = await receive(victim, '/during', `d-${Date.now()}`);
            assert.notEqual(response.status, 500);
            return response.status === 200 && ((await response.json()) as { matches: number }).matches === 1;
          },
          'the victim answers and matches the subscription made while its connections were down',
          10_000,
        );
        assert.equal(victim.process.exitCode, null, 'the victim is still running');
        await eventually(() => delivered(target).has(matchedId), 'and delivers').catch((error: unknown) => {
          console.log(
            victim
              .logs()
              .split('\n')
              .filter((l) => /"level":(40|50|60)/.test(l))
              .map((l) => {
                const j = JSON.parse(l) as { msg: string; level: number; err?: { message: string; stack?: string } };
                return `${j.level} ${j.msg} ${j.err?.message ?? ''} ${(j.err?.stack ?? '').split('\n').slice(1, 12).join(' | ')}`;
              })
              .join('\n'),
          );
          throw error;
        });
        const now = await backends();
        assert.ok(
          now.some((pid) => !killed.includes(pid)),
          'on new connections',
        );
        await eventually(
          () => victim.logs().includes('subscriptions reloaded after listening was lost'),
          'the victim reloads its subscriptions once it listens again',
        );
        assert.doesNotMatch(victim.logs(), /Unhandled 'error' event|"level":60/);
      } finally {
        assert.equal(await victim.stop(), 0);
        assert.equal(await other.stop(), 0);
      }
    } finally {
      await admin.end();
      await target.close();
      await database.cleanup();
    }
  });
});

describeOn(POSTGRES, 'a PostgreSQL database that goes silent for seconds', () => {
  it('answers 503 with Retry-After within the time-out meanwhile, and delivers every event it answered 200', async () => {
    const TIMEOUT_MS = 1_000;
    const database = await createPostgres(POSTGRES_TEST_URL!);
    const proxy = await startDatabaseProxy(database.url);
    const target = await startStub();
    try {
      assert.equal((await runCli(['--database-url', database.url, 'dbsync'])).code, 0);
      const server = await startServer({
        NOTIFICATIONS_DATABASE_URL: proxy.url,
        NOTIFICATIONS_DATABASE_TIMEOUT: `${TIMEOUT_MS}ms`,
        NOTIFICATIONS_RETRY_DELAYS: '200ms,200ms,200ms,200ms,200ms,200ms,200ms,200ms,200ms,200ms',
      });
      try {
        const uuid = await subscribe(server, '/silent', target.url);
        const answered200: string[] = [];
        const send = async (id: string) => {
          const response = await receive(server, '/silent', id);
          if (response.status === 200) answered200.push(id);
          return response;
        };
        for (let i = 0; i < 20; i++) assert.equal((await send(`before-${i}`)).status, 200);

        proxy.hold();
        const holdStarted = performance.now();
        await assertUnavailable(() => send('during-0'), TIMEOUT_MS, '/receive');
        await assertUnavailable(() => fetch(`${server.url}/eventmatch/${uuid}`, { headers: USER }), TIMEOUT_MS, 'GET /eventmatch/{uuid}');
        await assertUnavailable(
          () =>
            fetch(`${server.url}/eventmatch`, {
              method: 'POST',
              headers: { ...USER, ...JSON_BODY },
              body: JSON.stringify({ name: 'n', jsonpath: '$', target_url: target.url }),
            }),
          TIMEOUT_MS,
          'POST /eventmatch',
        );
        const statuses = await Promise.all(Array.from({ length: 10 }, (_, i) => send(`during-${i + 1}`).then((r) => r.status)));
        assert.deepEqual([...new Set(statuses)], [503], 'every answer during the hold');
        const health = performance.now();
        assert.equal((await fetch(`${server.url}/healthz`)).status, 200);
        assert.ok(performance.now() - health < 500, 'the process itself answers at once');
        assert.equal((await fetch(`${server.url}/readyz`)).status, 503);
        // Held for five seconds in all.
        await new Promise((r) => setTimeout(r, Math.max(0, 5_000 - (performance.now() - holdStarted))));
        proxy.release();

        await eventually(async () => (await send(`after-${Date.now()}`)).status === 200, 'answers again once the database does', 15_000);
        for (let i = 0; i < 10; i++) assert.equal((await send(`after-${i}`)).status, 200);
        await eventually(() => answered200.every((id) => delivered(target).has(id)), 'every event answered 200 is delivered', 30_000);
        assert.equal(server.process.exitCode, null);
        assert.doesNotMatch(server.logs(), /"statusCode":500/);
      } finally {
        assert.equal(await server.stop(), 0);
      }
    } finally {
      await proxy.close();
      await target.close();
      await database.cleanup();
    }
  });
});

describe('a SQLite database locked by another process', () => {
  it('answers 503 with Retry-After within the time-out while the lock is held, and 200 once it is let go', async () => {
    const TIMEOUT_MS = 500;
    const database = await createSqlite();
    const target = await startStub();
    try {
      assert.equal((await runCli(['--database-url', database.url, 'dbsync'])).code, 0);
      const server = await startServer({ NOTIFICATIONS_DATABASE_URL: database.url, NOTIFICATIONS_DATABASE_TIMEOUT: `${TIMEOUT_MS}ms` });
      const other = new SQLite(database.url.slice('sqlite:'.length));
      try {
        await subscribe(server, '/locked', target.url);
        assert.equal((await receive(server, '/locked', 'before')).status, 200);
        other.exec('begin immediate');
        await assertUnavailable(() => receive(server, '/locked', 'during'), TIMEOUT_MS, '/receive');
        await assertUnavailable(
          () =>
            fetch(`${server.url}/eventmatch`, {
              method: 'POST',
              headers: { ...USER, ...JSON_BODY },
              body: JSON.stringify({ name: 'n', jsonpath: '$', target_url: target.url }),
            }),
          TIMEOUT_MS,
          'POST /eventmatch',
        );
        other.exec('rollback');
        await eventually(
          async () => (await receive(server, '/locked', 'after')).status === 200,
          'answers again once the lock is let go',
          10_000,
        );
        await eventually(() => delivered(target).has('before') && delivered(target).has('after'), 'and delivers');
      } finally {
        other.close();
        assert.equal(await server.stop(), 0);
      }
    } finally {
      await target.close();
      await database.cleanup();
    }
  });
});
