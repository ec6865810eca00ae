/**
 * The npm package: `npm pack` on a clean clone (its dependencies installed, as after `npm ci`)
 * builds the programs (prepack) and packs them with the console, and nothing of the sources or
 * the tests; `npm install -g` of the tarball into an empty prefix runs no build step of ours,
 * brings no development dependency, and puts both programs on PATH, where they migrate a
 * database and serve the API and the console.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, it } from 'node:test';
import { describeOn } from '../support/database.js';
import { cleanEnv, type RunningServer, runCommand, startServer } from '../support/processes.js';
import { CLONE_SKIP, cloneHead, DEV_DEPENDENCIES, PACKAGE, ROOT } from '../support/project.js';

describeOn({ skip: CLONE_SKIP }, 'the npm package', () => {
  let dir = '';
  let tarball = '';
  let prefix = '';
  /** The environment of a shell whose PATH starts with the prefix's programs. */
  let env: Record<string, string> = {};

  before(
    async () => {
      dir = mkdtempSync(join(tmpdir(), 'notifications-package-'));
      const clone = join(dir, 'clone');
      cloneHead(clone);
      symlinkSync(join(ROOT, 'node_modules'), join(clone, 'node_modules'));
      const packed = await runCommand('npm', ['pack', '--pack-destination', dir], { cwd: clone, env: cleanEnv(), timeoutMs: 5 * 60_000 });
      assert.equal(packed.code, 0, packed.stderr);
      tarball = join(dir, packed.stdout.trim().split('\n').pop()!);

      prefix = join(dir, 'prefix');
      mkdirSync(prefix);
      const installed = await runCommand('npm', ['install', '--global', '--prefix', prefix, '--no-audit', '--no-fund', tarball], {
        cwd: dir,
        env: cleanEnv(),
        timeoutMs: 10 * 60_000,
      });
      assert.equal(installed.code, 0, installed.stderr);
      env = { PATH: `${join(prefix, 'bin')}:${process.env.PATH}` };
    },
    { timeout: 15 * 60_000 },
  );
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('holds the built programs and the console, and none of the sources, tests or build steps', async () => {
    const listed = await runCommand('tar', ['-tzf', tarball]);
    const files = listed.stdout.trim().split('\n');
    for (const file of [
      'dist/src/main.js',
      'dist/src/cli/main.js',
      'dist/console/main.js',
      'console/index.html',
      'deploy/systemd/svc-notifications.service',
      'package.json',
      'README.md',
    ]) {
      assert.ok(files.includes(`package/${file}`), `${file} is packed`);
    }
    const unwanted = files.filter((file) => /^package\/(src|test|bench|dist\/test|dist\/bench|node_modules)\/|\.(ts|map)$/.test(file));
    assert.deepEqual(unwanted, []);
    const manifest = JSON.parse(readFileSync(join(prefix, 'lib/node_modules/svc-notifications/package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    const installScripts = ['preinstall', 'install', 'postinstall', 'prepare'].filter((name) => name in manifest.scripts);
    assert.deepEqual(installScripts, [], 'nothing of ours runs at install');
  });

  it('installs both programs on PATH, with production dependencies only', async () => {
    assert.deepEqual(readdirSync(join(prefix, 'bin')).sort(), ['svc-notifications', 'svc-notifications-cmd']);
    for (const program of ['svc-notifications', 'svc-notifications-cmd']) {
      const version = await runCommand(program, ['--version'], { env: cleanEnv(env) });
      assert.equal(version.stdout.trim(), PACKAGE.version, `${program} --version: ${version.stderr}`);
    }
    const dependencies = join(prefix, 'lib/node_modules/svc-notifications/node_modules');
    const dev = DEV_DEPENDENCIES.filter((name) => existsSync(join(dependencies, name)));
    assert.deepEqual(dev, [], 'development dependencies installed');
  });

  it('migrates a database and serves the API and the console from the installed programs', async () => {
    const url = `sqlite:${join(dir, 'notifications.sqlite3')}`;
    const dbsync = await runCommand('svc-notifications-cmd', ['--database-url', url, 'dbsync'], { env: cleanEnv(env) });
    assert.equal(dbsync.code, 0, dbsync.stderr);
    let server: RunningServer | undefined;
    try {
      server = await startServer(
        { ...env, NOTIFICATIONS_DATABASE_URL: url, NOTIFICATIONS_DEFAULT_USER: 'alice' },
        { program: 'svc-notifications' },
      );
      assert.equal((await fetch(`${server.url}/readyz`)).status, 200);
      const console_ = await fetch(`${server.url}/console/main.js`);
      assert.equal(console_.status, 200, 'the console is served from the package');
      await console_.arrayBuffer();
      const created = await fetch(`${server.url}/eventmatch`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'all', jsonpath: '$', target_url: 'http://127.0.0.1:9/hook' }),
      });
      assert.equal(created.status, 200, await created.text());
    } finally {
      assert.equal(await server?.stop(), 0, server?.logs());
    }
  });
});
