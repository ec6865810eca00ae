import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { FACILITY_EVENT_FILE } from '../support/fixtures.js';
import { BATCHED, fails, raw, structured, v1, v01, v03 } from './helpers.js';

describe('batched mode', () => {
  it('parses every event of a batch, in order, each kept as sent', () => {
    const members = [
      { ...v1, id: '1', datacontenttype: 'application/octet-stream', data_base64: 'AAE=' },
      { ...v1, id: '2', source: '/other', data: { a: 1 } },
      { ...v1, id: '3' },
    ];
    const { batch, events } = structured(members, `${BATCHED}; charset=UTF-8`);
    assert.equal(batch, true);
    assert.deepEqual(
      events.map((event) => event.id),
      ['1', '2', '3'],
    );
    assert.deepEqual(
      events.map((event) => event.document),
      members,
    );
  });

  it("keeps each member's text as received, numbers and strings with brackets included", () => {
    const first = '{"specversion":"1.0","id":"1","source":"/s","type":"t","data":{"big":12345678901234567890,"s":"]}\\"[{"}}';
    const second = '{ "specversion":"1.0", "id":"2", "source":"/s", "type":"t", "data":[1.50, 1e2] }';
    const { events } = raw(BATCHED, `[\n  ${first},\n  ${second}\n]`);
    assert.deepEqual(
      events.map((event) => event.text),
      [first, second],
    );
  });

  it('accepts an empty batch: no events, still a batch', () => {
    assert.deepEqual(raw(BATCHED, '[]'), { batch: true, events: [] });
  });

  it('accepts a batch of 0.3 events and a batch of 0.1 events', () => {
    assert.deepEqual(
      structured([v03, { ...v03, id: 'x' }], BATCHED).events.map((event) => event.specVersion),
      ['0.3', '0.3'],
    );
    const facility = JSON.parse(readFileSync(FACILITY_EVENT_FILE, 'utf8')) as object;
    assert.deepEqual(
      structured([facility, v01], BATCHED).events.map((event) => event.id),
      ['C234-1234-1234', v01.eventID],
    );
  });

  it('answers a single structured event as no batch', () => {
    assert.equal(structured(v1).batch, false);
  });
});

describe('batched mode errors', () => {
  it('names the index of the one bad member', () => {
    const { id: _omitted, ...withoutId } = v1;
    fails(() => structured([v1, { ...v1, id: '2' }, withoutId], BATCHED), 400, '[2].id: required');
  });

  it('names the index and attribute for any validation failure', () => {
    fails(() => structured([v1, { ...v1, time: 'soon' }], BATCHED), 400, '[1].time: not an RFC 3339 timestamp');
    fails(() => structured([{ ...v01, eventTime: 'soon' }], BATCHED), 400, '[0].eventTime: not an RFC 3339 timestamp');
    fails(
      () => structured([{ ...v1, specversion: '2.0' }], BATCHED),
      400,
      '[0].specversion: unsupported version "2.0" (1.0, 0.3 and the legacy 0.1 are accepted)',
    );
  });

  it('refuses a member that is not an object', () => {
    fails(() => structured([v1, 'event'], BATCHED), 400, '[1]: must be an event object');
    fails(() => structured([[v1]], BATCHED), 400, '[0]: must be an event object');
  });

  it('refuses a batch body that is not an array', () => {
    fails(() => structured(v1, BATCHED), 400, 'body: must be a JSON array of events (application/cloudevents-batch+json)');
  });

  it('refuses a batch that mixes spec versions', () => {
    fails(
      () => structured([v1, v03], BATCHED),
      400,
      '[1].specversion: every event in a batch must have the same spec version as [0] (1.0)',
    );
    fails(
      () => structured([v03, v01], BATCHED),
      400,
      '[1].cloudEventsVersion: every event in a batch must have the same spec version as [0] (0.3)',
    );
  });

  it('refuses malformed JSON in a batch', () => {
    fails(() => raw(BATCHED, '[{"specversion": "1.0"},'), 400, /^body: not valid JSON/);
  });
});
