/**
 * The container image, built from a clean clone by the Dockerfile at the root and run by the
 * real Docker engine, with the host's network (the targets and PostgreSQL are on 127.0.0.1):
 * on SQLite in a volume it migrates, serves, delivers, turns healthy, stops with 0 on
 * `docker stop`, and a new container finds the data; on PostgreSQL the schema is migrated by
 * the image's `svc-notifications-cmd dbsync`, two containers share one database, and the
 * image's HEALTHCHECK turns the container unhealthy while its database is out of reach (and
 * healthy again when it is back).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, it } from 'node:test';
import { describeOn, POSTGRES, type TestDatabase } from '../support/database.js';
import { buildImageFromClone, DOCKER_SKIP, docker, dockerOk } from '../support/docker.js';
import { facilityEventText, facilityEventTextWithId } from '../support/fixtures.js';
import { eventually, type HttpStub, reply, startStub } from '../support/http-stub.js';
import { freePort, runCli } from '../support/processes.js';
import { CLONE_SKIP, DEV_DEPENDENCIES, PACKAGE } from '../support/project.js';
import { startTcpProxy } from '../support/tcp-proxy.js';

const IMAGE = 'svc-notifications:test';
const AS_ALICE = { 'http-remote-user': 'alice' };

interface ContainerState {
  Status: string;
  ExitCode: number;
  OOMKilled: boolean;
  Health?: { Status: string };
}

describeOn({ skip: CLONE_SKIP || DOCKER_SKIP }, 'the container image', () => {
  const containers: string[] = [];
  const volumes: string[] = [];

  let built = '';
  before(
    async () => {
      const seconds = await buildImageFromClone(IMAGE);
      const bytes = Number(await dockerOk(['image', 'inspect', '--format', '{{.Size}}', IMAGE]));
      built = `built in ${seconds.toFixed(0)} s; ${(bytes / 1e6).toFixed(0)} MB`;
    },
    { timeout: 20 * 60_000 },
  );
  after(async () => {
    if (containers.length > 0) await docker(['rm', '--force', '--volumes', ...containers]);
    if (volumes.length > 0) await docker(['volume', 'rm', '--force', ...volumes]);
  });

  /** Starts a container of the image in the background, probed for health every second; its name. */
  async function start(env: Record<string, string>, options: string[] = []): Promise<string> {
    const name = `notifications-test-${randomBytes(4).toString('hex')}`;
    containers.push(name);
    const settings = Object.entries(env).flatMap(([key, value]) => ['--env', `${key}=${value}`]);
    await dockerOk(['run', '--detach', '--name', name, '--network', 'host', '--health-interval', '1s', ...settings, ...options, IMAGE]);
    return name;
  }

  async function state(name: string): Promise<ContainerState> {
    // A loaded daemon has been seen to answer an inspect with nothing (exit 0): asked again.
    for (let tries = 1; ; tries++) {
      const text = (await dockerOk(['inspect', '--format', '{{json .State}}', name])).trim();
      if (text !== '') return JSON.parse(text) as ContainerState;
      if (tries === 10) throw new Error(`docker inspect ${name} answered nothing ${tries} times`);
    }
  }

  /** Waits until the container's server answers /readyz; fails with its logs when it exits first. */
  async function ready(name: string, url: string): Promise<void> {
    await eventually(
      async () => {
        const now = await state(name);
        if (now.Status !== 'running') throw new Error(`${name} is ${now.Status} (exit ${now.ExitCode}):\n${await logs(name)}`);
        return (await fetch(`${url}/readyz`).catch(() => undefined))?.status === 200;
      },
      `${name} ready at ${url}`,
      60_000,
    );
  }

  async function logs(name: string): Promise<string> {
    const { stdout, stderr } = await docker(['logs', name]);
    return stdout + stderr;
  }

  /** `docker stop` with Docker's own default time-out (10 s); the container's exit code. */
  async function stop(name: string): Promise<number> {
    await dockerOk(['stop', name], 60_000);
    const stopped = await state(name);
    assert.equal(stopped.OOMKilled, false);
    return stopped.ExitCode;
  }

  async function post(url: string, path: string, body: string, headers: Record<string, string>) {
    const response = await fetch(`${url}${path}`, { method: 'POST', headers, body });
    assert.equal(response.status, 200, await response.clone().text());
    return (await response.json()) as Record<string, unknown>;
  }

  async function subscribe(url: string, target: HttpStub): Promise<string> {
    const body = JSON.stringify({ name: 'Text files', jsonpath: '$.data[?@.mimetype == "text/plain"]', target_url: `${target.url}/hook` });
    return (await post(url, '/eventmatch', body, { ...AS_ALICE, 'content-type': 'application/json' })).uuid as string;
  }

  /** The facility's event (under another id when given one). */
  const receive = (url: string, id?: string) =>
    post(url, '/receive', id === undefined ? facilityEventText() : facilityEventTextWithId(id), {
      'content-type': 'application/cloudevents+json; charset=utf-8',
    });

  async function deliveries(url: string, uuid: string): Promise<Array<{ state: string }>> {
    return (await (await fetch(`${url}/eventmatch/${uuid}/deliveries`, { headers: AS_ALICE })).json()) as Array<{ state: string }>;
  }

  it('runs on Node.js 24 as a user of its own, with both programs on PATH, no development dependency, and its defaults', async (t) => {
    t.diagnostic(built);
    const config = JSON.parse(await dockerOk(['image', 'inspect', '--format', '{{json .Config}}', IMAGE])) as {
      User: string;
      Env: string[];
      WorkingDir: string;
      Volumes: Record<string, unknown>;
      ExposedPorts: Record<string, unknown>;
      Healthcheck: { Test: string[] };
    };
    assert.equal(config.WorkingDir, '/app');
    assert.deepEqual(Object.keys(config.Volumes), ['/data']);
    assert.deepEqual(Object.keys(config.ExposedPorts), ['8070/tcp']);
    assert.ok(config.Env.includes('NOTIFICATIONS_DATABASE_URL=sqlite:/data/notifications.sqlite3'), config.Env.join(' '));
    assert.ok(config.Env.includes('NOTIFICATIONS_ADDRESS=0.0.0.0'), config.Env.join(' '));
    assert.match(config.Healthcheck.Test.join(' '), /readiness-probe/);

    // Which of these node_modules holds: the development dependencies must be absent, two production ones present.
    const names = [...DEV_DEPENDENCIES, 'fastify', 'better-sqlite3'];
    const script = [
      'id -u',
      'node --version',
      'svc-notifications --version',
      'svc-notifications-cmd --version',
      'for name in "$@"; do [ -e "node_modules/$name" ] && echo "installed $name"; done',
      'command -v curl wget; true',
    ].join('; ');
    const [uid, nodeVersion, serverVersion, cliVersion, ...rest] = (
      await dockerOk(['run', '--rm', '--network', 'host', IMAGE, 'sh', '-c', script, 'sh', ...names])
    ).split('\n');
    assert.notEqual(uid, '0', 'not root');
    assert.match(nodeVersion!, /^v24\./, 'the Node.js line the Dockerfile names');
    assert.deepEqual([serverVersion, cliVersion], [PACKAGE.version, PACKAGE.version]);
    assert.deepEqual(rest, ['installed fastify', 'installed better-sqlite3'], 'production dependencies only, and neither curl nor wget');
  });

  it('on SQLite in a volume: migrates, serves, delivers, turns healthy, stops with 0, and a new container finds the data', async () => {
    const target = await startStub(reply(204));
    const volume = `notifications-test-${randomBytes(4).toString('hex')}`;
    volumes.push(volume);
    try {
      const port = await freePort();
      const url = `http://127.0.0.1:${port}`;
      const first = await start({ NOTIFICATIONS_PORT: String(port) }, ['--volume', `${volume}:/data`]);
      await ready(first, url);
      const uuid = await subscribe(url, target);
      assert.equal((await receive(url)).matches, 1);
      await eventually(async () => (await deliveries(url, uuid))[0]?.state === 'delivered', 'the event delivered');
      assert.equal(target.requests.length, 1);
      assert.equal(target.requests[0]!.body, facilityEventText().trim(), "the producer's bytes (whitespace around the object is not kept)");
      await eventually(async () => (await state(first)).Health?.Status === 'healthy', `${first} healthy`, 60_000);

      assert.equal(await stop(first), 0, `docker stop: exit 0\n${await logs(first)}`);
      assert.match(await logs(first), /shutting down/);

      const second = await start({ NOTIFICATIONS_PORT: String(port) }, ['--volume', `${volume}:/data`]);
      await ready(second, url);
      const listed = (await (await fetch(`${url}/eventmatch`, { headers: AS_ALICE })).json()) as Array<{ uuid: string }>;
      assert.deepEqual(
        listed.map((s) => s.uuid),
        [uuid],
      );
      assert.equal((await deliveries(url, uuid))[0]?.state, 'delivered');
      assert.equal((await receive(url)).duplicate, true, 'the event log kept the event');
      assert.equal(await stop(second), 0);
    } finally {
      await target.close();
    }
  });

  describeOn(POSTGRES, 'on PostgreSQL', () => {
    let database: TestDatabase;
    before(async () => (database = await POSTGRES.create()));
    after(() => database.cleanup());

    it('refuses a database not migrated; after the image migrates it, two containers share it', async () => {
      const target = await startStub(reply(204));
      try {
        const env = ['--env', `NOTIFICATIONS_DATABASE_URL=${database.url}`];
        const unmigrated = await docker([
          'run',
          '--rm',
          '--network',
          'host',
          ...env,
          '--env',
          `NOTIFICATIONS_PORT=${await freePort()}`,
          IMAGE,
        ]);
        assert.equal(unmigrated.code, 1, unmigrated.stdout + unmigrated.stderr);
        assert.match(unmigrated.stderr, /svc-notifications-cmd dbsync/);

        const dbsync = await docker(['run', '--rm', '--network', 'host', ...env, IMAGE, 'svc-notifications-cmd', 'dbsync']);
        assert.equal(dbsync.code, 0, dbsync.stdout + dbsync.stderr);

        const [a, b] = [`http://127.0.0.1:${await freePort()}`, `http://127.0.0.1:${await freePort()}`];
        const first = await start({ NOTIFICATIONS_DATABASE_URL: database.url, NOTIFICATIONS_PORT: new URL(a).port });
        const second = await start({ NOTIFICATIONS_DATABASE_URL: database.url, NOTIFICATIONS_PORT: new URL(b).port });
        await Promise.all([ready(first, a), ready(second, b)]);

        const uuid = await subscribe(a, target);
        await eventually(
          async () => ((await (await fetch(`${b}/eventmatch/${uuid}`, { headers: AS_ALICE })).json()) as { uuid?: string }).uuid === uuid,
          'the subscription made through one container read through the other',
        );
        // The other container's matcher takes it up within a second: an event it receives then is delivered.
        let sent = 0;
        await eventually(
          async () => (await receive(b, `shared-${++sent}`)).matches === 1,
          "the subscription in the second container's matcher",
        );
        await eventually(async () => (await deliveries(a, uuid))[0]?.state === 'delivered', 'delivered, read through the first');
        assert.equal(await stop(first), 0);
        assert.equal(await stop(second), 0);
        assert.equal(target.requests.length, 1, 'delivered once between the two');
      } finally {
        await target.close();
      }
    });

    it("turns unhealthy by the image's HEALTHCHECK while /readyz fails (the database out of reach), and healthy again after", async () => {
      // Its database reached through a proxy the test stops: PostgreSQL itself is not touched.
      const upstream = new URL(database.url);
      const proxy = await startTcpProxy(Number(upstream.port || 5432), upstream.hostname);
      try {
        const proxied = new URL(database.url);
        proxied.host = `127.0.0.1:${proxy.port}`;
        assert.equal((await runCli(['--database-url', database.url, 'dbsync'])).code, 0);
        const url = `http://127.0.0.1:${await freePort()}`;
        // The Dockerfile's command, probed every second (start() shortens the interval), unhealthy after two failures in a row.
        const name = await start({ NOTIFICATIONS_DATABASE_URL: proxied.toString(), NOTIFICATIONS_PORT: new URL(url).port }, [
          '--health-retries',
          '2',
        ]);
        await ready(name, url);
        const health = async () => dockerOk(['inspect', '--format', '{{.State.Health.Status}}', name]);
        await eventually(async () => (await health()) === 'healthy', `${name} healthy`, 60_000);

        await proxy.stop();
        const readiness = await fetch(`${url}/readyz`);
        assert.deepEqual([readiness.status, ((await readiness.json()) as { database: string }).database], [503, 'unreachable']);
        await eventually(async () => (await health()) === 'unhealthy', `${name} unhealthy`, 60_000);
        const checked = JSON.parse(await dockerOk(['inspect', '--format', '{{json .State.Health.Log}}', name])) as Array<{
          ExitCode: number;
          Output: string;
        }>;
        assert.equal(checked.at(-1)!.ExitCode, 1);
        assert.match(checked.at(-1)!.Output, /^not ready: 503 \{.*"database":"unreachable"/);
        assert.equal((await state(name)).Status, 'running', 'unhealthy, not ended');

        await proxy.start();
        await eventually(async () => (await health()) === 'healthy', `${name} healthy again`, 60_000);
        assert.equal(await stop(name), 0);
      } finally {
        await proxy.close();
      }
    });
  });
});
