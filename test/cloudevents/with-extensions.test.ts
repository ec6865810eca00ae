import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { FACILITY_EVENT_FILE } from '../support/fixtures.js';
import { type ExtensionValues, parseReceived, type ReceivedEvent, withExtensions } from '../../src/cloudevents/index.js';
import { raw, STRUCTURED, structured, v1, v01, v03 } from './helpers.js';

function received(document: object): ReceivedEvent {
  const [event] = structured(document).events;
  assert.ok(event);
  return event;
}

/** The delivered text, parsed: the tests below compare what a target reads. */
function delivered(event: ReceivedEvent, extensions: ExtensionValues): unknown {
  return JSON.parse(withExtensions(event, extensions));
}

function sentAs(text: string, specVersion: ReceivedEvent['specVersion'] = '1.0'): ReceivedEvent {
  const event = raw(STRUCTURED, text).events[0];
  assert.ok(event);
  assert.equal(event.specVersion, specVersion);
  return event;
}

describe('withExtensions', () => {
  it('adds top-level attributes to a 1.0 event, after its own', () => {
    const event = received({ ...v1, data: { a: 1 } });
    const document = delivered(event, { tenant: 'lab1', priority: 3, urgent: true });
    assert.deepEqual(document, { ...v1, data: { a: 1 }, tenant: 'lab1', priority: 3, urgent: true });
    assert.deepEqual(Object.keys(document as object).slice(-3), ['tenant', 'priority', 'urgent']);
  });

  it('adds top-level attributes to a 0.3 event', () => {
    assert.deepEqual(delivered(received(v03), { tenant: 'lab1' }), { ...v03, tenant: 'lab1' });
  });

  it('adds to the existing extensions object of a 0.1 event (the facility event)', () => {
    const [event] = parseReceived({
      contentType: 'application/cloudevents+json; charset=utf-8',
      headers: {},
      body: readFileSync(FACILITY_EVENT_FILE),
    }).events;
    assert.ok(event);
    const document = delivered(event, { tenant: 'lab1' }) as Record<string, unknown>;
    assert.deepEqual(document.extensions, { comExampleExtension: 'value', tenant: 'lab1' });
    assert.equal(document.tenant, undefined);
    assert.deepEqual({ ...document, extensions: undefined }, { ...(event.document as object), extensions: undefined });
  });

  it('creates the extensions object of a 0.1 event that has none, or has null', () => {
    assert.deepEqual(delivered(received(v01), { tenant: 'lab1' }), { ...v01, extensions: { tenant: 'lab1' } });
    assert.deepEqual(delivered(received({ ...v01, extensions: null }), { tenant: 'lab1' }), {
      ...v01,
      extensions: { tenant: 'lab1' },
    });
  });

  it("never overwrites the event's own attributes or extensions", () => {
    assert.deepEqual(delivered(received({ ...v1, tenant: 'from-producer' }), { tenant: 'from-subscription', other: 1 }), {
      ...v1,
      tenant: 'from-producer',
      other: 1,
    });
    assert.deepEqual(delivered(received({ ...v03, tenant: 7 }), { tenant: 'x' }), { ...v03, tenant: 7 });
    assert.deepEqual(delivered(received({ ...v01, extensions: { tenant: 'p' } }), { tenant: 's' }), {
      ...v01,
      extensions: { tenant: 'p' },
    });
  });

  it('fills an attribute the event sets to null, which means unset', () => {
    assert.deepEqual(delivered(received({ ...v1, tenant: null }), { tenant: 'lab1' }), { ...v1, tenant: 'lab1' });
  });

  it('returns the received text itself when nothing is added', () => {
    const event = received({ ...v1, tenant: 'p' });
    assert.equal(withExtensions(event, {}), event.text);
    assert.equal(withExtensions(event, { tenant: 'ignored' }), event.text);
    const legacy = received({ ...v01, extensions: { a: '1' } });
    assert.equal(withExtensions(legacy, { a: 'ignored' }), legacy.text);
  });

  it("keeps the producer's text and inserts only what it adds (numbers, escapes, spacing)", () => {
    const text =
      '{ "specversion": "1.0", "id": "n1", "source": "/s", "type": "t",\n  "data": {"big": 12345678901234567890, "f": 1.50, "e": 1e2, "s": "\\u00e9\\"}"} }';
    assert.equal(
      withExtensions(sentAs(text), { tenant: 'lab1', n: 2 }),
      '{ "specversion": "1.0", "id": "n1", "source": "/s", "type": "t",\n  "data": {"big": 12345678901234567890, "f": 1.50, "e": 1e2, "s": "\\u00e9\\"}"},"tenant":"lab1","n":2 }',
    );
  });

  it('fills a null attribute where it is written, and the last of a name written twice', () => {
    assert.equal(
      withExtensions(sentAs('{"specversion":"1.0","id":"i","source":"/s","type":"t","tenant":null,"data":1.0}'), { tenant: 'x' }),
      '{"specversion":"1.0","id":"i","source":"/s","type":"t","tenant":"x","data":1.0}',
    );
    const twice = sentAs('{"specversion":"1.0","id":"i","source":"/s","type":"t","tenant":"p","tenant":null}');
    assert.deepEqual(delivered(twice, { tenant: 'x' }), { ...v1, id: 'i', source: '/s', type: 't', tenant: 'x' });
  });

  it('adds to the 0.1 extensions object in place, leaving the rest of the text alone', () => {
    const v01Text = (rest: string) => `{"cloudEventsVersion":"0.1","eventID":"i","source":"/s","eventType":"t"${rest}}`;
    assert.equal(
      withExtensions(sentAs(v01Text(',"extensions":{ "a": 1.50 },"data":[1e2]'), '0.1'), { b: true }),
      v01Text(',"extensions":{ "a": 1.50,"b":true },"data":[1e2]'),
    );
    assert.equal(withExtensions(sentAs(v01Text(',"extensions":{}'), '0.1'), { b: 1 }), v01Text(',"extensions":{"b":1}'));
    assert.equal(
      withExtensions(sentAs(v01Text(',"extensions":null,"data":0.10'), '0.1'), { b: 1 }),
      v01Text(',"extensions":{"b":1},"data":0.10'),
    );
    assert.equal(withExtensions(sentAs(v01Text(',"data":0.10'), '0.1'), { b: 1 }), v01Text(',"data":0.10,"extensions":{"b":1}'));
  });
});
