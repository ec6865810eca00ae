/**
 * `/console/` as a browser gets it, without a browser: every file from the service itself, each
 * with the headers that keep the page to itself, no inline script, no user data in the page, every
 * module it loads served (no bare name left for an import map), and the API beside it still
 * JSON-only and without CORS. test/console/browser.test.ts drives the console in Chromium.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/api/app.js';
import { eventmatchRoutes } from '../../src/api/eventmatch-routes.js';
import { type ConsoleAssets, DEFAULT_DIRECTORIES, loadConsoleAssets } from '../../src/console/assets.js';
import { CONSOLE_HEADERS, consoleRoutes } from '../../src/console/routes.js';
import { systemClock } from '../../src/time/clock.js';
import { describeOn, openTestDatabase, testBackends } from '../support/database.js';
import { defaultTargetGuard } from '../support/target-guard.js';

/** What the whole console may weigh, gzipped as a proxy would send it: it is to stay small. */
const GZIPPED_BUDGET_BYTES = 48 * 1024;

function consoleApp(assets: ConsoleAssets | Error, extra: Array<(app: FastifyInstance) => void> = []): Promise<FastifyInstance> {
  return buildApp({ maxBodyBytes: 1024 * 1024, logger: 'silent', version: 'test' }, [consoleRoutes({ assets }), ...extra]);
}

function assertConsoleHeaders(headers: Record<string, unknown>, what: string): void {
  for (const [name, value] of Object.entries(CONSOLE_HEADERS)) assert.equal(headers[name], value, `${what}: ${name}`);
  const csp = String(headers['content-security-policy']);
  assert.match(csp, /(^|; )script-src 'self'(;|$)/, what);
  assert.match(csp, /(^|; )frame-ancestors 'none'(;|$)/, what);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|https?:|\*/, what);
  assert.equal(headers['x-content-type-options'], 'nosniff', what);
}

/** The relative modules a module imports (static `from '…'`, `import '…'` and dynamic `import('…')`). */
function importsOf(source: string): string[] {
  return [...source.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s*)(["'])([^"']+)\1/g)].map((match) => match[2]!);
}

describe('the web console’s files', () => {
  let app: FastifyInstance;
  let assets: ConsoleAssets;
  before(async () => {
    assets = loadConsoleAssets();
    app = await consoleApp(assets);
  });
  after(async () => {
    await app?.close();
  });

  it('serves the page at /console/ with the console’s headers, and /console leads there', async () => {
    const page = await app.inject({ method: 'GET', url: '/console/' });
    assert.equal(page.statusCode, 200);
    assert.equal(page.headers['content-type'], 'text/html; charset=utf-8');
    assertConsoleHeaders(page.headers, 'the page');
    assert.match(page.body, /<script type="module" src="\.\/main\.js"><\/script>/);

    const bare = await app.inject({ method: 'GET', url: '/console' });
    assert.equal(bare.statusCode, 308);
    assert.equal(bare.headers.location, 'console/', 'relative: it still works under a proxy’s prefix');
  });

  it('holds no inline script or style and nothing from elsewhere in the page', async () => {
    const page = (await app.inject({ method: 'GET', url: '/console/' })).body;
    for (const tag of page.match(/<script\b[^>]*>[\s\S]*?<\/script>/g) ?? [])
      assert.match(tag, /^<script [^>]*src="\.\/[^"]+"[^>]*><\/script>$/, tag);
    assert.doesNotMatch(page, /<style|\sstyle=|\son[a-z]+=/i);
    assert.doesNotMatch(page, /(src|href)="(https?:)?\/\//i, 'no CDN, web font or third-party script');
  });

  it('gives everyone the same page: no user data in it, whoever asks', async () => {
    const anonymous = await app.inject({ method: 'GET', url: '/console/' });
    const alice = await app.inject({ method: 'GET', url: '/console/', headers: { 'http-remote-user': 'alice' } });
    assert.equal(alice.body, anonymous.body);
    assert.equal(alice.headers.etag, anonymous.headers.etag);
    assert.ok(!alice.body.includes('alice'));
  });

  it('serves every module the page loads, each import of each resolving to a file it serves', async () => {
    const seen = new Set<string>();
    const pending = ['main.js'];
    while (pending.length > 0) {
      const path = pending.pop()!;
      if (seen.has(path)) continue;
      seen.add(path);
      const response = await app.inject({ method: 'GET', url: `/console/${path}` });
      assert.equal(response.statusCode, 200, `${path}: ${response.body.slice(0, 200)}`);
      assert.equal(response.headers['content-type'], 'text/javascript; charset=utf-8', path);
      assertConsoleHeaders(response.headers, path);
      for (const specifier of importsOf(response.body)) {
        assert.match(specifier, /^\.\.?\//, `${path} imports "${specifier}": a browser cannot resolve a bare name without an import map`);
        pending.push(new URL(specifier, `http://x/console/${path}`).pathname.replace(/^\/console\//, ''));
      }
    }
    for (const vendored of ['vendor/preact.js', 'vendor/hooks.js', 'vendor/htm.js']) assert.ok(seen.has(vendored), vendored);
  });

  it('serves the style sheet and icon with their types', async () => {
    const css = await app.inject({ method: 'GET', url: '/console/console.css' });
    assert.equal(css.statusCode, 200);
    assert.equal(css.headers['content-type'], 'text/css; charset=utf-8');
    assert.doesNotMatch(css.body, /@import|url\(\s*['"]?(https?:)?\/\//, 'no web font or remote image');
    const icon = await app.inject({ method: 'GET', url: '/console/icon.svg' });
    assert.equal(icon.headers['content-type'], 'image/svg+xml');
    assertConsoleHeaders(icon.headers, 'the icon');
  });

  it('answers HEAD, and 304 while a file is unchanged', async () => {
    const head = await app.inject({ method: 'HEAD', url: '/console/main.js' });
    assert.equal(head.statusCode, 200);
    assert.equal(head.body, '');
    const etag = String(head.headers.etag);
    const again = await app.inject({ method: 'GET', url: '/console/main.js', headers: { 'if-none-match': `W/"other", ${etag}` } });
    assert.equal(again.statusCode, 304);
    assert.equal(again.body, '');
    assertConsoleHeaders(again.headers, 'a 304');
    const changed = await app.inject({ method: 'GET', url: '/console/main.js', headers: { 'if-none-match': '"other"' } });
    assert.equal(changed.statusCode, 200);
  });

  it('answers 404 in the API’s error shape for anything else, sources and paths out of the folder included', async () => {
    for (const path of [
      '/console/nothing.js',
      '/console/src/main.ts',
      '/console/tsconfig.json',
      '/console/%2e%2e/package.json',
      '/console/../package.json',
    ]) {
      const response = await app.inject({ method: 'GET', url: path });
      assert.equal(response.statusCode, 404, path);
      assert.equal(response.json<{ code: string }>().code, 'ROUTE_NOT_FOUND', path);
    }
    const missing = await app.inject({ method: 'GET', url: '/console/nothing.js' });
    assertConsoleHeaders(missing.headers, 'a 404');
  });

  it(`stays small: everything it serves is under ${GZIPPED_BUDGET_BYTES / 1024} KiB gzipped`, () => {
    const total = [...assets.values()].reduce((sum, asset) => sum + gzipSync(asset.body, { level: 9 }).length, 0);
    assert.ok(total < GZIPPED_BUDGET_BYTES, `${total} bytes`);
  });
});

describe('the web console, not built', () => {
  it('refuses to load without the compiled modules, naming the build', () => {
    const empty = mkdtempSync(join(tmpdir(), 'console-not-built-'));
    try {
      assert.throws(
        () => loadConsoleAssets({ pages: DEFAULT_DIRECTORIES.pages, modules: empty }),
        /main\.js is missing: run `npm run build`/,
      );
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it('leaves the service up, /console/ answering 404', async () => {
    const app = await consoleApp(new Error('not built'), [(scope) => void scope.get('/ping', async () => ({ pong: true }))]);
    try {
      assert.equal((await app.inject({ method: 'GET', url: '/console/' })).statusCode, 404);
      assert.equal((await app.inject({ method: 'GET', url: '/ping' })).statusCode, 200);
    } finally {
      await app.close();
    }
  });
});

for (const backend of testBackends()) {
  describeOn(backend, `the API beside the console stays JSON-only and without CORS (${backend.name})`, () => {
    let test: Awaited<ReturnType<typeof openTestDatabase>>;
    let app: FastifyInstance;
    before(async () => {
      test = await openTestDatabase(backend);
      app = await consoleApp(loadConsoleAssets(), [
        eventmatchRoutes({
          database: test.handle,
          clock: systemClock(),
          secretKey: null,
          dialectMode: 'auto',
          userSubscriptions: 1000,
          targetGuard: defaultTargetGuard(),
          identity: { header: 'http-remote-user', defaultUser: null },
        }),
      ]);
    });
    after(async () => {
      await app?.close();
      await test?.close();
    });

    const ELSEWHERE = { origin: 'https://elsewhere.example', 'http-remote-user': 'alice' };

    it('answers a preflight from another site without allowing it', async () => {
      const preflight = await app.inject({
        method: 'OPTIONS',
        url: '/eventmatch',
        headers: { ...ELSEWHERE, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
      });
      assert.ok(preflight.statusCode >= 400, String(preflight.statusCode));
      assert.equal(preflight.headers['access-control-allow-origin'], undefined);
      assert.equal(preflight.headers['access-control-allow-methods'], undefined);
    });

    it('answers another site’s requests without CORS headers, so its pages cannot read them', async () => {
      const list = await app.inject({ method: 'GET', url: '/eventmatch', headers: ELSEWHERE });
      assert.equal(list.statusCode, 200);
      assert.equal(list.headers['access-control-allow-origin'], undefined);
      assert.equal(list.headers['access-control-allow-credentials'], undefined);
    });

    it('takes no form or text body, which a page elsewhere could send without a preflight', async () => {
      for (const type of ['application/x-www-form-urlencoded', 'text/plain', 'multipart/form-data; boundary=x']) {
        const response = await app.inject({
          method: 'POST',
          url: '/eventmatch',
          headers: { ...ELSEWHERE, 'content-type': type },
          payload: 'name=n&jsonpath=%24&target_url=http%3A%2F%2F127.0.0.1%3A9%2F',
        });
        assert.equal(response.statusCode, 415, type);
        assert.match(String(response.headers['content-type']), /^application\/json/);
      }
    });
  });
}
