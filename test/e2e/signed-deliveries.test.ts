/**
 * Signed deliveries end to end: the server as a process, a target on 127.0.0.1 that verifies
 * every delivery with the official Standard Webhooks library (`standardwebhooks`), on every
 * database.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { after, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { describeOn, testBackends } from '../support/database.js';
import { eventually, type HttpStub, startStub, type StubRequest } from '../support/http-stub.js';
import { serverOn } from '../support/server-on.js';

const USER = { 'http-remote-user': 'alice' };
const OVERLAP_MS = 2_000;

/** The three Standard Webhooks headers of a request, as the library takes them. */
function webhookHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const one = (name: string) => {
    const value = headers[name];
    assert.equal(typeof value, 'string', `${name} is sent once`);
    return value as string;
  };
  return { 'webhook-id': one('webhook-id'), 'webhook-timestamp': one('webhook-timestamp'), 'webhook-signature': one('webhook-signature') };
}

const verifies = (secret: string, request: StubRequest, headers = webhookHeaders(request.headers), body = request.body) => {
  try {
    new Webhook(secret).verify(body, headers);
    return true;
  } catch {
    return false;
  }
};

for (const backend of testBackends()) {
  describeOn(backend, `signed deliveries (${backend.name})`, () => {
    const server = serverOn(
      backend,
      {
        NOTIFICATIONS_RETRY_DELAYS: '100ms,100ms,100ms',
        NOTIFICATIONS_TARGET_TIMEOUT: '2s',
        NOTIFICATIONS_LEASE: '5s',
        NOTIFICATIONS_SECRET_KEY: randomBytes(32).toString('base64'),
        NOTIFICATIONS_SECRET_OVERLAP: `${OVERLAP_MS}ms`,
      },
      { open: true },
    );
    const targets: HttpStub[] = [];

    // Registered after serverOn's, which stopped the server: stop() again gives its exit code.
    after(async () => {
      assert.equal(await server.stop(), 0);
      for (const target of targets) await target.close();
    });

    /**
     * A target that accepts only what `secrets()` verifies (the library's own check), and
     * answers 500 to the first `failFirst` deliveries it accepts.
     */
    async function verifyingTarget(secrets: () => readonly string[], failFirst = 0): Promise<HttpStub> {
      let failing = failFirst;
      const target = await startStub((request, response) => {
        const ok = secrets().every((secret) => verifies(secret, request));
        response.writeHead(!ok ? 401 : failing-- > 0 ? 500 : 204).end();
      });
      targets.push(target);
      return target;
    }

    async function subscribe(targetUrl: string, source: string): Promise<{ uuid: string; secret: string }> {
      const created = await fetch(`${server.url}/eventmatch`, {
        method: 'POST',
        headers: { ...USER, 'content-type': 'application/json' },
        body: JSON.stringify({ name: source, jsonpath: `$[?$.source == '${source}']`, target_url: targetUrl, extensions: { tag: 'é✓' } }),
      });
      assert.equal(created.status, 200, await created.clone().text());
      const { uuid } = (await created.json()) as { uuid: string };
      const read = await fetch(`${server.url}/eventmatch/${uuid}/secret`, { headers: USER });
      assert.equal(read.status, 200);
      return { uuid, secret: ((await read.json()) as { secret: string }).secret };
    }

    async function rotate(uuid: string, body?: object): Promise<string> {
      const answer = await fetch(`${server.url}/eventmatch/${uuid}/secret/rotate`, {
        method: 'POST',
        headers: body === undefined ? USER : { ...USER, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      assert.equal(answer.status, 200, await answer.clone().text());
      return ((await answer.json()) as { secret: string }).secret;
    }

    async function send(source: string, id: string): Promise<void> {
      const answer = await fetch(`${server.url}/receive`, {
        method: 'POST',
        headers: { 'content-type': 'application/cloudevents+json' },
        body: JSON.stringify({ specversion: '1.0', id, source, type: 'org.example.signed', data: { text: 'ünïcödé 🎉' } }),
      });
      assert.equal(answer.status, 200);
    }

    const matchesOf = (subscription: string) =>
      server.db.db.selectFrom('matches').selectAll().where('subscription_uuid', '=', subscription).orderBy('created').execute();

    it('signs every attempt so that the library verifies it; webhook-id is the ELM uuid, the same on a retry', async () => {
      let secret = '';
      const target = await verifyingTarget(() => [secret], 1);
      const subscription = await subscribe(target.url, '/signed');
      secret = subscription.secret;
      await send('/signed', 'signed-1');
      await eventually(async () => (await matchesOf(subscription.uuid))[0]?.state === 'delivered', 'delivered after one retry');

      const [match] = await matchesOf(subscription.uuid);
      assert.equal(match!.attempts, 2);
      assert.equal(target.requests.length, 2, 'a 500, then the retry the target accepted');
      const [first, retry] = target.requests.map((request) => ({ request, headers: webhookHeaders(request.headers) }));
      for (const { request, headers } of [first!, retry!]) {
        assert.ok(verifies(secret, request), 'the library verifies it');
        assert.equal(headers['webhook-id'], match!.uuid);
        assert.match(headers['webhook-timestamp']!, /^\d+$/);
        assert.ok(Math.abs(Number(headers['webhook-timestamp']) - Date.now() / 1000) < 30);
        assert.match(headers['webhook-signature']!, /^v1,[A-Za-z0-9+/]{43}=$/);
      }
      assert.equal(first!.request.body, retry!.request.body);

      // Anything changed, and the library refuses it.
      const { request, headers } = first!;
      assert.ok(!verifies(secret, request, headers, request.body.replace('signed-1', 'signed-2')), 'tampered body');
      assert.ok(!verifies(secret, request, headers, `${request.body} `), 'a byte added to the body');
      const timestamp = String(Number(headers['webhook-timestamp']!) + 1);
      assert.ok(!verifies(secret, request, { ...headers, 'webhook-timestamp': timestamp }), 'tampered timestamp');
      assert.ok(!verifies(secret, request, { ...headers, 'webhook-id': match!.event_uuid }), 'another id');
      assert.ok(!verifies(`whsec_${randomBytes(32).toString('base64')}`, request), 'another secret');
    });

    it('after a rotation signs with the new and the previous secret, until the overlap is over', async () => {
      const target = await verifyingTarget(() => []);
      const subscription = await subscribe(target.url, '/rotated');
      const old = subscription.secret;
      const rotated = await rotate(subscription.uuid);
      const rotatedAt = Date.now();
      assert.notEqual(rotated, old);

      await send('/rotated', 'rotated-1');
      await eventually(() => target.requests.length === 1, 'the first delivery after the rotation');
      const during = target.requests[0]!;
      // Only meaningful while the overlap lasts: a slow machine is told so, not misread.
      assert.ok(Date.now() - rotatedAt < OVERLAP_MS, 'the delivery came within the overlap');
      assert.equal(webhookHeaders(during.headers)['webhook-signature']!.split(' ').length, 2);
      assert.ok(verifies(rotated, during), 'the new secret verifies it');
      assert.ok(verifies(old, during), 'and so does the previous one');

      await new Promise((resolve) => setTimeout(resolve, OVERLAP_MS + 200 - (Date.now() - rotatedAt)));
      await send('/rotated', 'rotated-2');
      await eventually(() => target.requests.length === 2, 'the delivery after the overlap');
      const later = target.requests[1]!;
      assert.equal(webhookHeaders(later.headers)['webhook-signature']!.split(' ').length, 1);
      assert.ok(verifies(rotated, later), 'the new secret verifies it');
      assert.ok(!verifies(old, later), 'the previous one no longer does');

      const given = `whsec_${randomBytes(24).toString('base64')}`;
      assert.equal(await rotate(subscription.uuid, { secret: given }), given);
      await send('/rotated', 'rotated-3');
      await eventually(() => target.requests.length === 3, 'the delivery after rotating to a given secret');
      assert.ok(verifies(given, target.requests[2]!), 'the given secret verifies it');
      assert.ok(verifies(rotated, target.requests[2]!), 'and the one it replaced, within the overlap');
      assert.ok(!verifies(old, target.requests[2]!));
    });

    it('logs no secret', () => {
      assert.ok(!/whsec_/.test(server.logs()), 'no signing secret in the logs');
    });
  });
}
