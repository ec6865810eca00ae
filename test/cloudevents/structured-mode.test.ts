import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { FACILITY_EVENT_FILE } from '../support/fixtures.js';
import { BATCHED, fails, raw, STRUCTURED, structured, v1, v03 } from './helpers.js';

const HOW = /: send a structured, binary or batched CloudEvent/;

describe('structured mode', () => {
  it('accepts the facility event as its metadata service sends it, and keeps it exactly', () => {
    const body = readFileSync(FACILITY_EVENT_FILE);
    const { batch, events } = raw('application/cloudevents+json; charset=utf-8', body);
    assert.equal(batch, false);
    assert.equal(events.length, 1);
    const [event] = events;
    assert.equal(event?.specVersion, '0.1');
    assert.equal(event?.id, 'C234-1234-1234');
    assert.equal(event?.type, 'org.pacifica.metadata.ingest');
    assert.equal(event?.source, '/pacifica/metadata/ingest');
    assert.deepEqual(event?.document, JSON.parse(body.toString('utf8')));
    assert.equal(JSON.stringify(event?.document), JSON.stringify(JSON.parse(body.toString('utf8'))));
  });

  it('accepts a 1.0 event with every optional attribute, extensions and data', () => {
    const document = {
      ...v1,
      subject: '123',
      time: '2018-04-05T17:31:00Z',
      dataschema: 'https://example.org/schemas/ingest.json',
      datacontenttype: 'application/json',
      comexampleextension1: 'value',
      comexampleothervalue: 5,
      flag: true,
      unset: null,
      data: { appinfoA: 'abc', appinfoB: 123 },
    };
    const [event] = structured(document).events;
    assert.deepEqual(event, { specVersion: '1.0', id: v1.id, source: v1.source, type: v1.type, document, text: JSON.stringify(document) });
  });

  it("keeps the event object's text as received: numbers, escapes, spacing, member order (outer whitespace and a byte order mark left out)", () => {
    const text =
      '{ "specversion":"1.0", "id":"n", "source":"/s", "type":"t", "2":1, "data": {"big":12345678901234567890,"f":1.50,"e":1e2,"u":"\\u00e9\u00e9"} }';
    const [event] = raw(STRUCTURED, `\uFEFF\r\n ${text}\n\t`).events;
    assert.equal(event?.text, text);
    assert.deepEqual(event.document, JSON.parse(text));
  });

  it('accepts a 1.0 event with binary data in data_base64', () => {
    const document = { ...v1, datacontenttype: 'application/octet-stream', data_base64: 'AAECAw==' };
    assert.deepEqual(structured(document).events[0]?.document, document);
  });

  it('accepts a 0.3 event with schemaurl, datacontentencoding and a map extension', () => {
    const document = {
      ...v03,
      schemaurl: '/schemas/ingest',
      datacontentencoding: 'base64',
      data: 'aGVsbG8=',
      ext: { nested: 1 },
      time: '2019-01-01T00:00:00+01:00',
    };
    const [event] = structured(document).events;
    assert.equal(event?.specVersion, '0.3');
    assert.equal(event?.id, v03.id);
    assert.deepEqual(event?.document, document);
  });

  it('keeps attribute values as sent: no trimming, no case or time normalisation', () => {
    const document = { ...v1, id: ' padded ', time: '2018-04-05t17:31:00.123456789+00:00', type: 'Com.Example.MixedCase' };
    assert.deepEqual(structured(document).events[0]?.document, document);
  });

  for (const contentType of [
    'application/cloudevents+json',
    'Application/CloudEvents+JSON; charset=UTF-8',
    'application/cloudevents+json;charset="utf-8"',
    'application/cloudevents+json; charset=utf8',
  ]) {
    it(`reads the content type ${contentType}`, () => {
      assert.equal(structured(v1, contentType).events[0]?.id, v1.id);
    });
  }

  it('takes an application/json body holding an event object as structured', () => {
    const [event] = structured({ ...v1, data: [1, 2] }, 'application/json').events;
    assert.equal(event?.id, v1.id);
  });

  it('takes an application/json body holding a 0.1 event (cloudEventsVersion) as structured', () => {
    const body = readFileSync(FACILITY_EVENT_FILE);
    assert.equal(raw('application/json', body).events[0]?.specVersion, '0.1');
  });

  it('validates an application/json event that names an unsupported version', () => {
    fails(
      () => structured({ ...v1, specversion: '2.0' }, 'application/json'),
      400,
      'specversion: unsupported version "2.0" (1.0, 0.3 and the legacy 0.1 are accepted)',
    );
  });

  it('ignores a leading UTF-8 byte order mark before JSON', () => {
    const body = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify(v1))]);
    assert.equal(raw(STRUCTURED, body).events[0]?.id, v1.id);
  });

  it('keeps non-ASCII text in data as sent', () => {
    const document = { ...v1, data: { name: 'パソコン資産管理台帳（S&T HK）_現地調達PC.xls' } };
    assert.deepEqual(structured(document).events[0]?.document, document);
  });
});

describe('structured mode errors', () => {
  it('refuses malformed JSON with 400', () => {
    fails(() => raw(STRUCTURED, '{"specversion": "1.0",'), 400, /^body: not valid JSON/);
  });

  it('refuses an empty body with 400', () => {
    fails(() => raw(STRUCTURED, ''), 400, 'body: not valid JSON (empty)');
  });

  it('refuses malformed JSON sent as application/json with 400, not 415', () => {
    fails(() => raw('application/json', '{oops}'), 400, /^body: not valid JSON/);
  });

  it('refuses bytes that are not UTF-8 with 400', () => {
    fails(() => raw(STRUCTURED, Buffer.from([0x7b, 0x22, 0xc3, 0x28, 0x22, 0x7d])), 400, /^body: not valid UTF-8/);
  });

  for (const contentType of ['application/cloudevents+json; charset=iso-8859-1', 'application/json; charset=utf-16']) {
    it(`refuses JSON in another charset with 415 (${contentType})`, () => {
      fails(() => structured(v1, contentType), 415, /^content-type: charset "[^"]+" is not supported for JSON: send UTF-8/);
    });
  }

  for (const [body, message] of [
    ['[]', /^body: must be a JSON object \(one event\); send a JSON array as application\/cloudevents-batch\+json$/],
    ['"event"', /^body: must be a JSON object \(one event\)$/],
    ['null', /^body: must be a JSON object \(one event\)$/],
  ] as const) {
    it(`refuses a structured body that is ${body} with 400`, () => {
      fails(() => raw(STRUCTURED, body), 400, message);
    });
  }

  for (const [contentType, body] of [
    ['application/json', '{"name": "not an event"}'],
    ['application/json', '[{"specversion": "1.0"}]'],
    ['text/plain', 'hello'],
    ['application/xml', '<event/>'],
    ['application/cloudevents+avro', 'xyz'],
    [undefined, JSON.stringify(v1)],
  ] as const) {
    it(`answers 415 for ${contentType ?? 'no content type'} without ce-specversion`, () => {
      fails(() => raw(contentType, body), 415, new RegExp(`^unsupported media type .*${HOW.source}`));
    });
  }

  it('names the media type in the 415 message', () => {
    fails(() => raw('text/plain; charset=utf-8', 'x'), 415, /^unsupported media type "text\/plain" without a ce-specversion header: /);
  });

  it('refuses a body nested deeper than 100 levels, in every JSON mode, and accepts 100', () => {
    const nested = (levels: number): unknown => (levels === 0 ? 'bottom' : { x: nested(levels - 1) });
    // The event object is the first level.
    assert.equal(structured({ ...v1, data: nested(99) }).events.length, 1);
    fails(() => structured({ ...v1, data: nested(100) }), 400, 'body: nested deeper than 100 levels');
    fails(() => structured([{ ...v1, data: nested(99) }], BATCHED), 400, 'body: nested deeper than 100 levels');
    fails(
      () =>
        raw('application/json', JSON.stringify(nested(101)), { 'ce-specversion': '1.0', 'ce-id': '1', 'ce-source': '/s', 'ce-type': 't' }),
      400,
      'body: nested deeper than 100 levels',
    );
  });
});
