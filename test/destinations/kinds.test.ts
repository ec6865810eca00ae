import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { SubscriptionRow } from '../../src/db/tables.js';
import { destinationByKind } from '../../src/delivery/destination-by-kind.js';
import type { Destination } from '../../src/delivery/destination.js';
import {
  authRefusal,
  DESTINATION_KINDS,
  kindOfScheme,
  kindOfSubscription,
  refusedAuthTypes,
  TARGET_SCHEMES,
} from '../../src/destinations/kinds.js';
import { targetUrlProblem } from '../../src/destinations/target-url.js';

describe('destination kinds', () => {
  it('are each declared once, a scheme naming one kind', () => {
    const ids = DESTINATION_KINDS.map((kind) => kind.id);
    assert.deepEqual(ids, [...new Set(ids)]);
    assert.deepEqual(TARGET_SCHEMES, ['http', 'https', 'amqp', 'mqtt', 'nats', 'redis']);
    for (const kind of DESTINATION_KINDS) {
      assert.equal(kind.form === null, kind.delivery === 'pull', kind.id);
      for (const scheme of kind.schemes) assert.ok(kind.form?.startsWith(`${scheme}://`) || kind.id === 'webhook', kind.id);
    }
  });

  it('are found by the scheme, in any case, and not by anything else', () => {
    assert.equal(kindOfScheme('HTTPS://example.org')?.id, 'webhook');
    assert.equal(kindOfScheme('Redis://h/k')?.id, 'redis');
    assert.equal(kindOfScheme('amqps://h/?routing_key=q'), undefined);
    assert.equal(kindOfScheme('example.org/amqp:x'), undefined);
    assert.equal(kindOfScheme('no-colon'), undefined);
  });

  it('say which destination delivers a subscription: pull by its delivery, push by its scheme', () => {
    const handler = (delivery: string, target_url: string) => kindOfSubscription({ delivery, target_url }).handler;
    assert.equal(handler('pull', ''), 'pull');
    assert.equal(handler('push', 'https://example.org/'), 'push');
    assert.equal(handler('push', 'nats://h/s'), 'broker');
    // Stored before today's checks: pushed over HTTP, where it fails as unusable.
    assert.equal(handler('push', 'ftp://h/'), 'push');
  });

  it('say which auth a target takes', () => {
    assert.deepEqual(refusedAuthTypes('https://example.org/'), []);
    // A client certificate is presented in TLS: not over plain http.
    assert.deepEqual(refusedAuthTypes('http://example.org/'), ['mtls']);
    assert.deepEqual(refusedAuthTypes('mqtt://h/t'), ['header', 'oauth2', 'mtls']);
    assert.equal(
      authRefusal('HTTP://example.org/', 'mtls'),
      '"mtls" (a client certificate presented in the TLS handshake) needs a target_url of scheme https',
    );
    assert.equal(
      authRefusal('amqp://h/?routing_key=q', 'oauth2'),
      `must be "basic" (the broker's user name and password), or send {} for none: the target_url is a broker's (amqp)`,
    );
    assert.equal(authRefusal('https://example.org/', 'header'), undefined);
    assert.equal(authRefusal('redis://h/k', 'basic'), undefined);
    assert.equal(
      authRefusal('redis://h/k', 'header'),
      `must be "basic" (the broker's user name and password), or send {} for none: the target_url is a broker's (redis)`,
    );
  });

  it('read target URLs by their kind', () => {
    assert.equal(targetUrlProblem('https://example.org/events'), undefined);
    assert.equal(targetUrlProblem('amqp://h/?routing_key=q'), undefined);
    assert.equal(targetUrlProblem('ftp://h/'), 'must be an http, https, amqp, mqtt, nats or redis URL, not ftp');
    assert.match(targetUrlProblem('http:h') ?? '', /^must be an absolute http or https URL/);
    assert.match(targetUrlProblem('http:///h') ?? '', /^must be an absolute http or https URL/);
    assert.equal(targetUrlProblem('https://u:p@h/'), 'must not contain credentials; put them in auth');
    assert.equal(targetUrlProblem('nats://h/a.>'), 'the subject "a.>" has a wildcard: publish to one subject');
  });
});

describe('destinationByKind', () => {
  const named = (name: string): Destination => ({
    laneOf: () => name,
    unchanged: () => true,
    deliver: async () => ({ outcome: { kind: 'waiting' }, durationMs: 0 }),
  });
  const destination = destinationByKind({ push: named('push'), broker: named('broker'), pull: named('pull') });
  const row = (delivery: string, target_url: string) => ({ delivery, target_url }) as SubscriptionRow;

  it('hands each subscription to the destination of its kind', () => {
    assert.equal(destination.laneOf(row('push', 'https://example.org/')), 'push');
    assert.equal(destination.laneOf(row('push', 'redis://h/k')), 'broker');
    assert.equal(destination.laneOf(row('pull', '')), 'pull');
  });

  it('counts a subscription moved to another destination as changed', () => {
    assert.equal(destination.unchanged(row('push', 'https://h/'), row('push', 'https://h/')), true);
    assert.equal(destination.unchanged(row('push', 'https://h/'), row('push', 'amqp://h/?routing_key=q')), false);
  });
});
