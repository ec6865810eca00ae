import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fails, raw } from './helpers.js';

const headers = {
  'ce-specversion': '1.0',
  'ce-id': 'A234-1234-1234',
  'ce-source': '/mycontext',
  'ce-type': 'com.example.someevent',
};

describe('binary mode', () => {
  it('parses a JSON body into data and builds the structured document', () => {
    const { batch, events } = raw('application/json; charset=utf-8', '{"appinfoA": "abc", "appinfoB": 123}', {
      ...headers,
      'ce-time': '2018-04-05T03:56:24Z',
      host: 'example.org',
    });
    assert.equal(batch, false);
    assert.deepEqual(events, [
      {
        specVersion: '1.0',
        id: 'A234-1234-1234',
        source: '/mycontext',
        type: 'com.example.someevent',
        document: {
          ...withoutCe(headers),
          time: '2018-04-05T03:56:24Z',
          datacontenttype: 'application/json; charset=utf-8',
          data: { appinfoA: 'abc', appinfoB: 123 },
        },
        text: `${JSON.stringify({ ...withoutCe(headers), time: '2018-04-05T03:56:24Z', datacontenttype: 'application/json; charset=utf-8' }).slice(0, -1)},"data":{"appinfoA": "abc", "appinfoB": 123}}`,
      },
    ]);
  });

  it('keeps a JSON body as sent for data in its text: numbers, escapes and spacing (a byte order mark and outer whitespace left out)', () => {
    const body = '\uFEFF \n{"big": 12345678901234567890, "f": 1.50, "e": 1e2, "s": "\\u00e9"}\n';
    const [event] = raw('application/json', body, headers).events;
    assert.ok(event);
    assert.equal(
      event.text,
      `${JSON.stringify({ ...withoutCe(headers), datacontenttype: 'application/json' }).slice(0, -1)},"data":${body.slice(3, -1)}}`,
    );
    assert.deepEqual(JSON.parse(event.text), event.document);
    const [scalar] = raw('application/json', '1.50', headers).events;
    assert.equal(scalar?.text.endsWith(',"data":1.50}'), true);
  });

  it('writes text and base64 data in its text as the document holds them', () => {
    for (const [type, body] of [
      ['text/plain', 'h\u00e9llo "x"'],
      ['application/octet-stream', Buffer.from([0, 1, 2, 255])],
    ] as const) {
      const [event] = raw(type, body, headers).events;
      assert.ok(event);
      assert.equal(event.text, JSON.stringify(event.document));
    }
  });

  it('parses a +json body and a JSON string body', () => {
    assert.deepEqual(raw('application/vnd.example+json', '[1, 2]', headers).events[0]?.document, {
      ...withoutCe(headers),
      datacontenttype: 'application/vnd.example+json',
      data: [1, 2],
    });
    assert.equal(
      (raw('application/json', '"I\'m just a string"', headers).events[0]!.document as { data: unknown }).data,
      "I'm just a string",
    );
  });

  it('keeps a UTF-8 text body as a string', () => {
    assert.deepEqual(raw('text/plain; charset=utf-8', 'Grüße, 世界', headers).events[0]?.document, {
      ...withoutCe(headers),
      datacontenttype: 'text/plain; charset=utf-8',
      data: 'Grüße, 世界',
    });
  });

  it('keeps an XML text body as a string', () => {
    const document = raw('text/xml', '<much wow="xml"/>', headers).events[0]?.document as Record<string, unknown>;
    assert.equal(document.data, '<much wow="xml"/>');
  });

  it('puts a binary body into data_base64 (1.0)', () => {
    const bytes = Buffer.from([0, 1, 2, 0xff, 0xfe]);
    assert.deepEqual(raw('application/octet-stream', bytes, headers).events[0]?.document, {
      ...withoutCe(headers),
      datacontenttype: 'application/octet-stream',
      data_base64: bytes.toString('base64'),
    });
  });

  it('puts text in a charset other than UTF-8, or invalid UTF-8 text, into data_base64', () => {
    const latin1 = Buffer.from('Grüße', 'latin1');
    for (const contentType of ['text/plain; charset=iso-8859-1', 'text/plain']) {
      const document = raw(contentType, latin1, headers).events[0]?.document as Record<string, unknown>;
      assert.equal(document.data_base64, latin1.toString('base64'), contentType);
      assert.equal(document.data, undefined);
    }
  });

  it('encodes a 0.3 binary body as base64 data with datacontentencoding', () => {
    const document = raw('image/png', Buffer.from([0x89, 0x50]), { ...headers, 'ce-specversion': '0.3' }).events[0]?.document as Record<
      string,
      unknown
    >;
    assert.equal(document.datacontentencoding, 'base64');
    assert.equal(document.data, 'iVA=');
  });

  it('takes a body without Content-Type as binary data, and an empty body as no data', () => {
    assert.deepEqual(raw(undefined, Buffer.from([1]), headers).events[0]?.document, { ...withoutCe(headers), data_base64: 'AQ==' });
    assert.deepEqual(raw(undefined, '', headers).events[0]?.document, withoutCe(headers));
    assert.deepEqual(raw('application/json', '', headers).events[0]?.document, {
      ...withoutCe(headers),
      datacontenttype: 'application/json',
    });
  });

  it('percent-decodes header values as UTF-8', () => {
    const document = raw(undefined, '', {
      ...headers,
      'ce-id': 'Euro%20%E2%82%AC%20%F0%9F%98%80',
      'ce-subject': '100%25%20sure',
      'ce-comexampleext': '%e2%82%ac',
    }).events[0]?.document as Record<string, unknown>;
    assert.equal(document.id, 'Euro € 😀');
    assert.equal(document.subject, '100% sure');
    assert.equal(document.comexampleext, '€');
  });

  it('unquotes double-quoted header values before percent-decoding', () => {
    const document = raw(undefined, '', { ...headers, 'ce-subject': '"a \\"quoted\\" value%21"' }).events[0]?.document as Record<
      string,
      unknown
    >;
    assert.equal(document.subject, 'a "quoted" value!');
  });

  it('reads raw UTF-8 header bytes, which Node hands over as latin1 characters', () => {
    const latin1 = Buffer.from('Grüße', 'utf8').toString('latin1');
    const document = raw(undefined, '', { ...headers, 'ce-subject': latin1 }).events[0]?.document as Record<string, unknown>;
    assert.equal(document.subject, 'Grüße');
  });

  it('reads header names case-insensitively and keeps other headers out', () => {
    const document = raw('text/plain', 'x', {
      'CE-SpecVersion': '1.0',
      'Ce-Id': '1',
      'ce-source': '/s',
      'CE-TYPE': 't',
      'x-request-id': 'r',
    }).events[0]?.document;
    assert.deepEqual(document, { specversion: '1.0', id: '1', source: '/s', type: 't', datacontenttype: 'text/plain', data: 'x' });
  });

  it('takes binary mode over sniffing when an application/json message has ce-specversion', () => {
    const body = JSON.stringify({ specversion: '1.0', id: 'inner', source: '/inner', type: 'inner' });
    const [event] = raw('application/json', body, headers).events;
    assert.equal(event?.id, 'A234-1234-1234');
    assert.deepEqual((event!.document as Record<string, unknown>).data, JSON.parse(body));
  });
});

describe('binary mode errors', () => {
  for (const header of ['ce-id', 'ce-source', 'ce-type']) {
    it(`names the missing ${header} header`, () => {
      const partial: Record<string, string> = { ...headers };
      delete partial[header];
      fails(() => raw('text/plain', 'x', partial), 400, `${header}: required`);
    });
  }

  it('refuses an unsupported ce-specversion', () => {
    fails(
      () => raw('text/plain', 'x', { ...headers, 'ce-specversion': '2.0' }),
      400,
      'ce-specversion: unsupported version "2.0" (1.0, 0.3 and the legacy 0.1 are accepted)',
    );
  });

  it('refuses 0.1 in binary mode: that shape exists only in structured mode', () => {
    fails(
      () => raw('text/plain', 'x', { ...headers, 'ce-specversion': '0.1' }),
      400,
      /^ce-specversion: 0\.1 events carry cloudEventsVersion/,
    );
  });

  it('refuses ce-datacontenttype, which the binding forbids beside Content-Type', () => {
    fails(
      () => raw('text/plain', 'x', { ...headers, 'ce-datacontenttype': 'text/plain' }),
      400,
      /^ce-datacontenttype: not allowed in binary mode/,
    );
  });

  for (const [value, message] of [
    ['%C0%A0', /^ce-subject: not valid UTF-8 once percent-decoded$/],
    ['%E2%82', /^ce-subject: not valid UTF-8 once percent-decoded$/],
    ['50%', /^ce-subject: "%" must start a percent-encoded byte/],
    ['%zz', /^ce-subject: "%" must start a percent-encoded byte/],
    ['"unterminated', /^ce-subject: unterminated quoted string$/],
  ] as const) {
    it(`refuses the header value ${value}`, () => {
      fails(() => raw('text/plain', 'x', { ...headers, 'ce-subject': value }), 400, message);
    });
  }

  for (const header of ['ce-data', 'ce-data_base64']) {
    it(`refuses ${header}: in binary mode the body is the data`, () => {
      fails(
        () => raw(undefined, '', { ...headers, [header]: 'AA==' }),
        400,
        `${header}: not an attribute; in binary mode the body is the data`,
      );
    });
  }

  it('refuses a ce-__proto__ header as an attribute name instead of setting a prototype', () => {
    fails(() => raw(undefined, '', { ...headers, 'ce-__proto__': 'x' }), 400, /^ce-__proto__: extension attribute names/);
  });

  it('refuses an attribute sent twice', () => {
    fails(() => raw('text/plain', 'x', { ...headers, 'ce-subject': ['a', 'b'] }), 400, /^ce-subject: sent more than once/);
  });

  it('refuses a malformed JSON body and a JSON body in another charset', () => {
    fails(() => raw('application/json', '{nope', headers), 400, /^body: not valid JSON/);
    fails(() => raw('application/json; charset=latin1', '{}', headers), 415, /^content-type: charset "latin1"/);
  });

  it('validates header attributes like structured ones', () => {
    fails(() => raw('text/plain', 'x', { ...headers, 'ce-time': 'yesterday' }), 400, 'ce-time: not an RFC 3339 timestamp');
    fails(() => raw('text/plain', 'x', { ...headers, 'ce-source': 'not a uri' }), 400, 'ce-source: must be a non-empty URI-reference');
    fails(
      () => raw('text/plain', 'x', { ...headers, 'ce-my_ext': 'v' }),
      400,
      /^ce-my_ext: extension attribute names are lowercase letters/,
    );
    fails(() => raw('not a media type', 'x', headers), 400, /^content-type: must be a media type/);
  });
});

function withoutCe(source: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(source).map(([name, value]) => [name.slice(3), value]));
}
