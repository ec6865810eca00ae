import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isAbsoluteUri, isBase64, isRfc3339, isUriReference } from '../../src/cloudevents/attribute-types.js';
import { isMediaType, parseMediaType } from '../../src/request-body/media-type.js';

function table(name: string, predicate: (value: string) => boolean, valid: string[], invalid: string[]) {
  describe(name, () => {
    it('accepts valid values', () => {
      for (const value of valid) assert.equal(predicate(value), true, value);
    });
    it('refuses invalid values', () => {
      for (const value of invalid) assert.equal(predicate(value), false, value);
    });
  });
}

table(
  'RFC 3339 timestamps',
  isRfc3339,
  [
    '2018-04-05T17:31:00Z',
    '2018-04-05t17:31:00z',
    '2018-04-05T17:31:00.123456789+05:30',
    '2016-12-31T23:59:60Z',
    '2024-02-29T00:00:00-00:00',
  ],
  [
    '2018-04-05',
    '2018-04-05 17:31:00Z',
    '2018-04-05T17:31Z',
    '2018-04-05T17:31:00',
    '2018-13-01T00:00:00Z',
    '2023-02-29T00:00:00Z',
    '2018-04-05T24:00:00Z',
    '2018-04-05T17:31:00+24:00',
    '2018-04-05T17:31:00.Z',
    'Tue Nov 29 14:09:05 PST 2016',
  ],
);

table(
  'URI-references (RFC 3986 4.1)',
  isUriReference,
  [
    '/pacifica/metadata/ingest',
    'https://github.com/cloudevents',
    'mailto:cncf-wg-serverless@lists.cncf.io',
    'urn:uuid:6e8bc430-9c3a-11d9-9669-0800200c9a66',
    '1-555-123-4567',
    'cloudevents/spec/pull/123',
    'http://user:pw@[::1]:8080/a?b=c#d',
    'http://[v7.fe80::1]/',
    '//example.org/path',
    '%2Fencoded',
    '',
  ],
  ['/with space', '1a:b', 'http://exa mple.org/', 'http://[::1/', 'http://host:port/', '/50%', '/ünïcode', 'a#b#c', '/tab\t'],
);

table(
  'absolute URIs (dataschema)',
  isAbsoluteUri,
  ['https://example.org/schema.json', 'urn:example:schema', 'https://example.org/s.json#/definitions/a'],
  ['/schemas/1', 'schema.json', ''],
);

table('base64 (RFC 4648)', isBase64, ['', 'AA==', 'AAE=', 'AAEC', 'aGVsbG8gd29ybGQ='], ['A', 'AA=', 'AA', 'AA==AA==', 'aGVs bG8=', 'a-_b']);

table(
  'media types (RFC 2046)',
  isMediaType,
  ['application/json', 'text/plain; charset=utf-8', 'application/cloudevents+json;charset="UTF-8"', 'multipart/form-data; boundary="a;b"'],
  ['json', 'application/', '/json', 'text/plain;', 'text/plain; charset', 'text/pl ain'],
);

describe('Content-Type parsing', () => {
  it('lower-cases the type and parameter names, unquotes values, keeps quoted semicolons', () => {
    assert.deepEqual(parseMediaType('Text/Plain; Charset="UTF-8"; x="a;b"'), {
      essence: 'text/plain',
      parameters: { charset: 'UTF-8', x: 'a;b' },
    });
    assert.deepEqual(parseMediaType(undefined), { essence: '', parameters: {} });
  });
});
