/**
 * The nginx locations of deploy/nginx/svc-notifications.conf, run by a real nginx in front of
 * the built server: people sign in and the service sees who they are in Http-Remote-User, never
 * what a client sent in it (nor in Http_Remote_User); /receive needs no sign-in but the
 * service's token; the metrics and probes are not served through the front door.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { describeOn, SQLITE, type TestDatabase } from '../support/database.js';
import { eventually } from '../support/http-stub.js';
import { freePort, type RunningServer, runCli, startServer } from '../support/processes.js';
import { skipUnless } from '../support/project.js';

const LOCATIONS = fileURLToPath(new URL('../../../deploy/nginx/svc-notifications.conf', import.meta.url));
const NGINX_SKIP = skipUnless('nginx', ['-v'], 'nginx is missing: apt-get install nginx (.ci/run does)');
const TOKEN = 'metadata-service-token';
const ALICE = `Basic ${Buffer.from('alice:wonderland').toString('base64')}`;

describeOn({ skip: SQLITE.skip || NGINX_SKIP }, 'the nginx front proxy', () => {
  let database: TestDatabase;
  let server: RunningServer;
  let nginx: ChildProcess;
  let nginxOutput = '';
  let dir = '';
  let front = '';

  before(async () => {
    database = await SQLITE.create();
    assert.equal((await runCli(['--database-url', database.url, 'dbsync'])).code, 0);
    server = await startServer({ NOTIFICATIONS_DATABASE_URL: database.url, NOTIFICATIONS_RECEIVE_TOKEN: TOKEN });

    dir = mkdtempSync(join(tmpdir(), 'notifications-nginx-'));
    mkdirSync(join(dir, 'logs'));
    writeFileSync(join(dir, 'htpasswd'), 'alice:{PLAIN}wonderland\n');
    const port = await freePort();
    front = `http://127.0.0.1:${port}`;
    writeFileSync(
      join(dir, 'nginx.conf'),
      `daemon off;
master_process off;
pid ${dir}/nginx.pid;
error_log stderr warn;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  upstream svc_notifications { server 127.0.0.1:${new URL(server.url).port}; keepalive 4; }
  server {
    listen 127.0.0.1:${port};
    include ${LOCATIONS};
  }
}
`,
    );
    nginx = spawn('nginx', ['-p', `${dir}/`, '-c', join(dir, 'nginx.conf')], { stdio: ['ignore', 'pipe', 'pipe'] });
    nginx.stdout!.on('data', (d: Buffer) => (nginxOutput += d.toString()));
    nginx.stderr!.on('data', (d: Buffer) => (nginxOutput += d.toString()));
    await eventually(async () => {
      if (nginx.exitCode !== null) throw new Error(`nginx exited ${nginx.exitCode}: ${nginxOutput}`);
      return (await fetch(`${front}/receive`, { method: 'POST' }).catch(() => undefined)) !== undefined;
    }, 'nginx listening');
  });
  after(async () => {
    if (nginx && nginx.exitCode === null) {
      const exited = new Promise((resolve) => nginx.once('exit', resolve));
      nginx.kill('SIGTERM');
      await exited;
    }
    await server?.stop();
    await database?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  it('asks people to sign in', async () => {
    const answer = await fetch(`${front}/eventmatch`, { headers: { 'http-remote-user': 'alice' } });
    assert.equal(answer.status, 401);
    assert.match(answer.headers.get('www-authenticate') ?? '', /^Basic/);
    await answer.arrayBuffer();
  });

  it('tells the service who signed in, whatever identity the client claimed', async () => {
    const created = await fetch(`${front}/eventmatch`, {
      method: 'POST',
      headers: {
        authorization: ALICE,
        'content-type': 'application/json',
        'http-remote-user': 'mallory',
        http_remote_user: 'mallory',
      },
      body: JSON.stringify({ name: 'mine', jsonpath: '$', target_url: 'http://127.0.0.1:9/hook' }),
    });
    assert.equal(created.status, 200, await created.clone().text());
    assert.equal(((await created.json()) as { user: string }).user, 'alice');

    const listed = (await (
      await fetch(`${front}/eventmatch`, { headers: { authorization: ALICE, 'http-remote-user': 'mallory' } })
    ).json()) as Array<{
      user: string;
    }>;
    assert.deepEqual(
      listed.map((s) => s.user),
      ['alice'],
    );
    const mallorys = (await (await fetch(`${server.url}/eventmatch`, { headers: { 'http-remote-user': 'mallory' } })).json()) as unknown[];
    assert.deepEqual(mallorys, [], 'nothing was made as mallory');
  });

  it("gives the service nginx's request id, not the client's", async () => {
    for (const [path, headers] of [
      ['/eventmatch', { authorization: ALICE }],
      ['/receive', {}],
    ] as const) {
      const answer = await fetch(`${front}${path}`, {
        method: path === '/receive' ? 'POST' : 'GET',
        headers: { ...headers, 'x-request-id': 'chosen-by-the-client' },
      });
      await answer.arrayBuffer();
      assert.match(answer.headers.get('x-request-id') ?? '', /^[0-9a-f]{32}$/, path);
    }
  });

  it('passes /receive with no sign-in, where the service checks its token', async () => {
    const event = JSON.stringify({ specversion: '1.0', id: 'proxied-1', source: '/proxy', type: 'org.example' });
    const headers = { 'content-type': 'application/cloudevents+json' };
    const refused = await fetch(`${front}/receive`, { method: 'POST', headers, body: event });
    assert.equal(refused.status, 401, await refused.text());
    const accepted = await fetch(`${front}/receive`, {
      method: 'POST',
      headers: { ...headers, authorization: `Bearer ${TOKEN}` },
      body: event,
    });
    assert.equal(accepted.status, 200, await accepted.text());
  });

  it('does not serve the metrics or the probes through the front door', async () => {
    for (const path of ['/metrics', '/healthz', '/readyz']) {
      const answer = await fetch(`${front}${path}`, { headers: { authorization: ALICE } });
      assert.equal(answer.status, 404, path);
      await answer.arrayBuffer();
    }
  });
});
