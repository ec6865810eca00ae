import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { parseReceived, type ReceivedEvent, withExtensions } from '../../src/cloudevents/index.js';
import { structured, v1, v01, v03 } from './helpers.js';

const FACILITY_EVENT = new URL('../../../../shared/fixtures/pacifica-ingest-event-v0.1.json', import.meta.url);

function received(document: object): ReceivedEvent {
  const [event] = structured(document).events;
  assert.ok(event);
  return event;
}

describe('withExtensions', () => {
  it('adds top-level attributes to a 1.0 event, after its own', () => {
    const event = received({ ...v1, data: { a: 1 } });
    const delivered = withExtensions(event, { tenant: 'lab1', priority: 3, urgent: true });
    assert.deepEqual(delivered, { ...v1, data: { a: 1 }, tenant: 'lab1', priority: 3, urgent: true });
    assert.deepEqual(Object.keys(delivered as object).slice(-3), ['tenant', 'priority', 'urgent']);
  });

  it('adds top-level attributes to a 0.3 event', () => {
    assert.deepEqual(withExtensions(received(v03), { tenant: 'lab1' }), { ...v03, tenant: 'lab1' });
  });

  it('adds to the existing extensions object of a 0.1 event (the facility event)', () => {
    const [event] = parseReceived({
      contentType: 'application/cloudevents+json; charset=utf-8',
      headers: {},
      body: readFileSync(FACILITY_EVENT),
    }).events;
    assert.ok(event);
    const delivered = withExtensions(event, { tenant: 'lab1' }) as Record<string, unknown>;
    assert.deepEqual(delivered.extensions, { comExampleExtension: 'value', tenant: 'lab1' });
    assert.equal(delivered.tenant, undefined);
    assert.deepEqual({ ...delivered, extensions: undefined }, { ...(event.document as object), extensions: undefined });
  });

  it('creates the extensions object of a 0.1 event that has none, or has null', () => {
    assert.deepEqual(withExtensions(received(v01), { tenant: 'lab1' }), { ...v01, extensions: { tenant: 'lab1' } });
    assert.deepEqual(withExtensions(received({ ...v01, extensions: null }), { tenant: 'lab1' }), {
      ...v01,
      extensions: { tenant: 'lab1' },
    });
  });

  it("never overwrites the event's own attributes or extensions", () => {
    assert.deepEqual(withExtensions(received({ ...v1, tenant: 'from-producer' }), { tenant: 'from-subscription', other: 1 }), {
      ...v1,
      tenant: 'from-producer',
      other: 1,
    });
    assert.deepEqual(withExtensions(received({ ...v03, tenant: 7 }), { tenant: 'x' }), { ...v03, tenant: 7 });
    assert.deepEqual(withExtensions(received({ ...v01, extensions: { tenant: 'p' } }), { tenant: 's' }), {
      ...v01,
      extensions: { tenant: 'p' },
    });
  });

  it('fills an attribute the event sets to null, which means unset', () => {
    assert.deepEqual(withExtensions(received({ ...v1, tenant: null }), { tenant: 'lab1' }), { ...v1, tenant: 'lab1' });
  });

  it('leaves the received document untouched and returns it as is when nothing is added', () => {
    const event = received({ ...v1, tenant: 'p' });
    const before = JSON.stringify(event.document);
    withExtensions(event, { other: 'x' });
    assert.equal(JSON.stringify(event.document), before);
    assert.equal(withExtensions(event, {}), event.document);
    assert.equal(withExtensions(event, { tenant: 'ignored' }), event.document);
    const legacy = received({ ...v01, extensions: { a: '1' } });
    withExtensions(legacy, { b: '2' });
    assert.deepEqual((legacy.document as { extensions: unknown }).extensions, { a: '1' });
  });
});
