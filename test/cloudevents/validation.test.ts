import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fails, structured, v1, v01, v03 } from './helpers.js';

const ACCEPTED = '(1.0, 0.3 and the legacy 0.1 are accepted)';

function without(document: Record<string, unknown>, name: string): Record<string, unknown> {
  const copy = { ...document };
  delete copy[name];
  return copy;
}

describe('required attributes', () => {
  const cases: [string, Record<string, unknown>, string][] = [
    ['1.0', v1, 'specversion'],
    ['1.0', v1, 'id'],
    ['1.0', v1, 'source'],
    ['1.0', v1, 'type'],
    ['0.3', v03, 'specversion'],
    ['0.3', v03, 'id'],
    ['0.3', v03, 'source'],
    ['0.3', v03, 'type'],
    ['0.1', v01, 'eventID'],
    ['0.1', v01, 'eventType'],
    ['0.1', v01, 'source'],
  ];
  for (const [version, document, name] of cases) {
    it(`${version}: ${name} missing`, () => {
      fails(() => structured(without(document, name)), 400, `${name}: required`);
    });
    it(`${version}: ${name} null, which means unset`, () => {
      fails(() => structured({ ...document, [name]: null }), 400, `${name}: required`);
    });
  }

  it('0.1: cloudEventsVersion missing leaves no version at all', () => {
    fails(() => structured(without(v01, 'cloudEventsVersion')), 400, 'specversion: required');
  });
});

describe('spec versions', () => {
  const cases: [string, Record<string, unknown>, string][] = [
    ['specversion "2.0"', { ...v1, specversion: '2.0' }, `specversion: unsupported version "2.0" ${ACCEPTED}`],
    ['specversion "1.0.2"', { ...v1, specversion: '1.0.2' }, `specversion: unsupported version "1.0.2" ${ACCEPTED}`],
    ['specversion 1 (a number)', { ...v1, specversion: 1 }, `specversion: unsupported version 1 ${ACCEPTED}`],
    ['cloudEventsVersion "0.2"', { ...v01, cloudEventsVersion: '0.2' }, `cloudEventsVersion: unsupported version "0.2" ${ACCEPTED}`],
    ['cloudEventsVersion 0.1 (a number)', { ...v01, cloudEventsVersion: 0.1 }, `cloudEventsVersion: unsupported version 0.1 ${ACCEPTED}`],
  ];
  for (const [name, document, message] of cases) {
    it(`refuses ${name}`, () => {
      fails(() => structured(document), 400, message);
    });
  }

  it('points a specversion "0.1" event to the 0.1 attribute names', () => {
    fails(
      () => structured({ ...v1, specversion: '0.1' }),
      400,
      /^specversion: 0\.1 events carry cloudEventsVersion, eventID and eventType/,
    );
  });
});

describe('attribute types', () => {
  const cases: [string, Record<string, unknown>, string][] = [
    ['1.0 id a number', { ...v1, id: 1234 }, 'id: must be a string'],
    ['1.0 id empty', { ...v1, id: '' }, 'id: must be a non-empty string'],
    [
      '1.0 id with a control character',
      { ...v1, id: 'a\u0007b' },
      'id: must not contain control characters, unpaired surrogates or Unicode noncharacters (CloudEvents String)',
    ],
    ['1.0 type an object', { ...v1, type: { name: 't' } }, 'type: must be a string'],
    ['1.0 source empty', { ...v1, source: '' }, 'source: must be a non-empty URI-reference'],
    ['1.0 source with a space', { ...v1, source: '/my context' }, 'source: must be a non-empty URI-reference'],
    ['1.0 source a number', { ...v1, source: 42 }, 'source: must be a non-empty URI-reference'],
    ['0.3 source with a space', { ...v03, source: 'my context' }, 'source: must be a non-empty URI-reference'],
    ['1.0 time not a timestamp', { ...v1, time: 'yesterday' }, 'time: not an RFC 3339 timestamp'],
    ['1.0 time without a zone', { ...v1, time: '2018-04-05T17:31:00' }, 'time: not an RFC 3339 timestamp'],
    ['1.0 time a number', { ...v1, time: 1522949460 }, 'time: must be a string'],
    ['0.3 time on 31 April', { ...v03, time: '2018-04-31T17:31:00Z' }, 'time: not an RFC 3339 timestamp'],
    ['0.1 eventTime not a timestamp', { ...v01, eventTime: '05/04/2018' }, 'eventTime: not an RFC 3339 timestamp'],
    [
      '1.0 datacontenttype not a media type',
      { ...v1, datacontenttype: 'json' },
      'datacontenttype: must be a media type such as "application/json" (RFC 2046)',
    ],
    ['0.3 datacontenttype not a string', { ...v03, datacontenttype: ['application/json'] }, 'datacontenttype: must be a string'],
    ['1.0 dataschema relative', { ...v1, dataschema: '/schemas/1' }, 'dataschema: must be a non-empty absolute URI'],
    ['1.0 dataschema empty', { ...v1, dataschema: '' }, 'dataschema: must be a non-empty absolute URI'],
    ['0.3 schemaurl empty', { ...v03, schemaurl: '' }, 'schemaurl: must be a non-empty URI-reference'],
    ['0.3 schemaurl with a space', { ...v03, schemaurl: 'a b' }, 'schemaurl: must be a non-empty URI-reference'],
    ['1.0 subject empty', { ...v1, subject: '' }, 'subject: must be a non-empty string'],
    ['1.0 subject a boolean', { ...v1, subject: true }, 'subject: must be a string'],
    ['0.3 subject empty', { ...v03, subject: '' }, 'subject: must be a non-empty string'],
    ['1.0 data_base64 not base64', { ...v1, data_base64: 'not base64!' }, 'data_base64: must be a base64 string (RFC 4648)'],
    [
      '1.0 data_base64 beside data',
      { ...v1, data: 'x', data_base64: 'AA==' },
      'data_base64: not allowed together with data; send one of them',
    ],
    [
      '0.3 datacontentencoding not base64',
      { ...v03, datacontentencoding: 'quoted-printable', data: 'x' },
      'datacontentencoding: must be "base64", the only encoding CloudEvents 0.3 defines',
    ],
    [
      '0.3 base64 data that is not base64',
      { ...v03, datacontentencoding: 'base64', data: 'héllo' },
      'data: must be a base64 string when datacontentencoding is "base64"',
    ],
    ['0.1 eventID empty', { ...v01, eventID: '' }, 'eventID: must be a non-empty string'],
    ['0.1 eventType a number', { ...v01, eventType: 7 }, 'eventType: must be a string'],
    ['0.1 extensions an array', { ...v01, extensions: ['a'] }, 'extensions: must be an object'],
    ['0.1 extensions a string', { ...v01, extensions: 'a=b' }, 'extensions: must be an object'],
    ['0.1 contentType a number', { ...v01, contentType: 1 }, 'contentType: must be a string'],
    ['0.1 schemaURL an object', { ...v01, schemaURL: {} }, 'schemaURL: must be a string'],
  ];
  for (const [name, document, message] of cases) {
    it(`refuses ${name}`, () => {
      fails(() => structured(document), 400, message);
    });
  }

  it('treats null optional attributes as unset', () => {
    assert.equal(structured({ ...v1, time: null, subject: null, dataschema: null, datacontenttype: null }).events.length, 1);
    assert.equal(structured({ ...v01, eventTime: null, extensions: null }).events.length, 1);
  });

  it('accepts the legacy 0.1 shape leniently: any non-empty source string, an empty extensions object', () => {
    assert.equal(
      structured({ ...v01, source: 'pacifica metadata', extensions: {}, eventTypeVersion: '1' }).events[0]?.source,
      'pacifica metadata',
    );
  });
});

describe('extension attributes', () => {
  for (const [version, document, name, message] of [
    ['1.0', v1, 'comExampleExtension', 'extension attribute names are lowercase letters (a-z) or digits (CloudEvents 1.0)'],
    ['1.0', v1, 'my_ext', 'extension attribute names are lowercase letters (a-z) or digits (CloudEvents 1.0)'],
    ['1.0', v1, 'schemaurl?', 'extension attribute names are lowercase letters (a-z) or digits (CloudEvents 1.0)'],
    ['0.3', v03, 'Upper', 'extension attribute names are lowercase letters (a-z) or digits (CloudEvents 0.3)'],
    ['0.3', v03, 'data_base64', 'extension attribute names are lowercase letters (a-z) or digits (CloudEvents 0.3)'],
  ] as const) {
    it(`${version}: refuses the name ${name}`, () => {
      fails(() => structured({ ...document, [name]: 'v' }), 400, `${name}: ${message}`);
    });
  }

  it('names an empty extension name visibly', () => {
    fails(() => structured({ ...v1, '': 'v' }), 400, /^"": extension attribute names/);
  });

  // "SHOULD NOT exceed 20 characters" is a recommendation to producers; the SDKs send longer ones.
  it('accepts names longer than 20 characters and digits-only names in 1.0, long names in 0.3', () => {
    assert.equal(structured({ ...v1, abcdefghijklmnopqrst: 'v', abcdefghijklmnopqrstu: 'v', '123': 1 }).events.length, 1);
    assert.equal(structured({ ...v1, ['x'.repeat(200)]: 'v' }).events.length, 1);
    assert.equal(structured({ ...v03, abcdefghijklmnopqrstuvwxyz: 'v' }).events.length, 1);
  });

  for (const [version, document, value, message] of [
    ['1.0', v1, 1.5, 'numbers in attributes must be integers from -2147483648 to 2147483647 (CloudEvents Integer)'],
    ['1.0', v1, 2147483648, 'numbers in attributes must be integers from -2147483648 to 2147483647 (CloudEvents Integer)'],
    ['1.0', v1, { nested: 1 }, 'an extension attribute must be a string, a boolean or an integer'],
    ['1.0', v1, ['a'], 'an extension attribute must be a string, a boolean or an integer'],
    ['1.0', v1, 'bell\u0007', 'must not contain control characters, unpaired surrogates or Unicode noncharacters (CloudEvents String)'],
    [
      '1.0',
      v1,
      'lone \ud800 surrogate',
      'must not contain control characters, unpaired surrogates or Unicode noncharacters (CloudEvents String)',
    ],
    ['0.3', v03, ['a'], 'an extension attribute must be a string, a boolean, an integer or an object'],
    ['0.3', v03, 0.5, 'numbers in attributes must be integers from -2147483648 to 2147483647 (CloudEvents Integer)'],
  ] as const) {
    it(`${version}: refuses the extension value ${JSON.stringify(value)}`, () => {
      fails(() => structured({ ...document, ext: value }), 400, `ext: ${message}`);
    });
  }

  it('accepts every extension value type 1.0 has: string, boolean, integer, null, and paired surrogates', () => {
    const document = { ...v1, s: 'emoji 😀', b: false, i: -2147483648, n: null, uri: 'https://example.org' };
    assert.deepEqual(structured(document).events[0]?.document, document);
  });
});

describe('the attributes that identify an event', () => {
  const cases: [string, Record<string, unknown>, string, string][] = [
    ['1.0', v1, 'id', 'x'],
    ['1.0', v1, 'source', '/'],
    ['0.3', v03, 'id', 'x'],
    ['0.1', v01, 'eventID', 'x'],
    ['0.1', v01, 'source', '/'],
  ];
  for (const [version, document, name, unit] of cases) {
    it(`${version}: ${name} is at most 1 KiB (it keys the log), in bytes as UTF-8`, () => {
      const fits = unit + 'a'.repeat(1_023);
      assert.doesNotThrow(() => structured({ ...document, [name]: fits }));
      fails(
        () => structured({ ...document, [name]: `${fits}a` }),
        400,
        `${name}: at most 1024 bytes as UTF-8 (found 1025); it identifies the event in the log`,
      );
      // é is two bytes: 513 of them are 1,026 bytes though 513 characters (a 1.0 source is a
      // URI-reference, which has no such character).
      if (version === '1.0' && name === 'source') return;
      fails(
        () => structured({ ...document, [name]: unit + 'é'.repeat(513) }),
        400,
        `${name}: at most 1024 bytes as UTF-8 (found ${1 + 1026}); it identifies the event in the log`,
      );
    });
  }
});
