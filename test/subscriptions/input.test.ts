import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readBrokerTarget } from '../../src/destinations/target-url.js';
import { ServiceError } from '../../src/errors.js';
import { parsePage, validateCreate, validateTryIt, validateUpdate } from '../../src/subscriptions/input.js';
import { canonicalUuid } from '../../src/uuid.js';

const valid = { name: 'n', jsonpath: '$.data', target_url: 'https://example.org/hook' };

function rejects(run: () => unknown, message: RegExp) {
  assert.throws(run, (error: unknown) => {
    assert.ok(error instanceof ServiceError, String(error));
    assert.equal(error.statusCode, 400);
    assert.match(error.message, message);
    return true;
  });
}

describe('subscription input', () => {
  it('defaults nothing it was not given and compiles the expression', () => {
    const input = validateCreate(valid, 'auto');
    assert.equal(input.name, 'n');
    assert.equal(input.compiled.source, '$.data');
    assert.equal(input.compiled.dialect, 'rfc9535');
    assert.equal(input.auth, undefined);
    assert.equal(input.extensions, undefined);
    assert.equal(input.disable, undefined);
  });

  it('keeps the name as written, inner and outer spaces included', () => {
    assert.equal(validateCreate({ ...valid, name: '  my pipeline ' }, 'auto').name, '  my pipeline ');
  });

  it('compiles in the dialects the mode allows', () => {
    const pacifica = '$.data[*][?(@.mimetype = "text/plain")]';
    assert.equal(validateCreate({ ...valid, jsonpath: pacifica }, 'auto').compiled.dialect, 'jsonpath2');
    rejects(() => validateCreate({ ...valid, jsonpath: pacifica }, 'rfc9535'), /^body\.jsonpath: invalid JSONPath at position \d+: /);
    assert.equal(validateCreate({ ...valid, jsonpath: '$.data[*][?(@.size > 1)]' }, 'jsonpath2-first').compiled.dialect, 'jsonpath2');
  });

  it('accepts http and https URLs of every usual form', () => {
    for (const url of [
      'http://example.org',
      'HTTPS://Example.org:8443/a/b?c=d&e=f',
      'http://127.0.0.1:8080/hook',
      'http://[::1]:9000/',
      'https://example.org/x#fragment',
      'https://xn--bcher-kva.example/',
      'https://bücher.example/pfad/ä',
    ]) {
      assert.equal(validateCreate({ ...valid, target_url: url }, 'auto').target_url, url, url);
    }
  });

  it('refuses URLs with only a user name, with spaces inside, or other schemes', () => {
    rejects(() => validateCreate({ ...valid, target_url: 'https://token@example.org/' }, 'auto'), /must not contain credentials/);
    rejects(() => validateCreate({ ...valid, target_url: 'https://exa mple.org/' }, 'auto'), /must not contain spaces/);
    rejects(
      () => validateCreate({ ...valid, target_url: 'https://example.org/\n' }, 'auto'),
      /must not contain spaces or control characters/,
    );
    rejects(() => validateCreate({ ...valid, target_url: 'file:///etc/passwd' }, 'auto'), /not file$/);
    rejects(() => validateCreate({ ...valid, target_url: 'ws://example.org/' }, 'auto'), /not ws$/);
    rejects(() => validateCreate({ ...valid, target_url: 'http://' }, 'auto'), /absolute http or https URL/);
  });

  it('accepts the three auth shapes', () => {
    assert.deepEqual(validateCreate({ ...valid, auth: {} }, 'auto').auth, {});
    const basic = { type: 'basic', basic: { username: 'ü', password: '' } };
    assert.deepEqual(validateCreate({ ...valid, auth: basic }, 'auto').auth, basic);
    const emptyUser = { type: 'basic', basic: { username: '', password: 'api-key' } };
    assert.deepEqual(validateCreate({ ...valid, auth: emptyUser }, 'auto').auth, emptyUser);
    for (const header of [
      { type: 'Bearer', credentials: 'abc.def_ghi-jkl~+/=' },
      { type: 'token', credentials: 'x' },
      { type: 'Digest', credentials: 'username="a", realm="b", nonce="c"' },
    ]) {
      assert.deepEqual(validateCreate({ ...valid, auth: { type: 'header', header } }, 'auto').auth, { type: 'header', header });
    }
  });

  it('never repeats a credential in an error message', () => {
    const secret = 'hunter2\u0001';
    for (const auth of [
      { type: 'basic', basic: { username: 'a:b', password: secret } },
      { type: 'basic', basic: { username: 'u', password: secret } },
      { type: 'header', header: { type: 'Bearer', credentials: secret } },
      { type: 'header', header: { type: secret, credentials: 'x' } },
    ]) {
      assert.throws(
        () => validateCreate({ ...valid, auth }, 'auto'),
        (error: Error) => !error.message.includes('hunter2'),
      );
    }
  });

  it('accepts extension values CloudEvents can carry', () => {
    const extensions = { a: '', b: 'ünïcødé 😀', c: 2147483647, d: -2147483648, e: 0, f: true, g: false, abcdefghij0123456789: 'max' };
    assert.deepEqual(validateCreate({ ...valid, extensions }, 'auto').extensions, extensions);
    assert.deepEqual(validateCreate({ ...valid, extensions: {} }, 'auto').extensions, {});
    assert.deepEqual(validateCreate({ ...valid, extensions: { traceparent: 'x', dataref: 'y' } }, 'auto').extensions, {
      traceparent: 'x',
      dataref: 'y',
    });
  });

  it('refuses unpaired surrogates, C1 controls and noncharacters in extension strings', () => {
    for (const value of ['\ud800', 'a\udc00', '\u0085', '\ufffe', '\u{10ffff}']) {
      rejects(
        () => validateCreate({ ...valid, extensions: { a: value } }, 'auto'),
        /^body\.extensions\.a: must not contain control characters/,
      );
    }
  });

  it('maps disabled: null to enable and anything else to disable', () => {
    assert.equal(validateUpdate({ disabled: null }, 'auto').disable, false);
    for (const value of [true, false, 0, '', 'now', '2024-01-01T00:00:00.000000', {}]) {
      assert.equal(validateUpdate({ disabled: value }, 'auto').disable, true, JSON.stringify(value));
    }
    assert.equal(validateUpdate({}, 'auto').disable, undefined);
  });

  // Unknown fields, and name and jsonpath missing on create, are the route's schema's (test/api/eventmatch-errors.test.ts).
  it('ignores service-set fields', () => {
    const input = validateUpdate({ uuid: 1, user: 'x', created: null, updated: [], deleted: 'y', version: 2, error: 'z' }, 'auto');
    assert.deepEqual(input, {});
  });

  it('requires target_url on create only', () => {
    rejects(() => validateCreate({ name: 'n', jsonpath: '$' }, 'auto'), /^body\.target_url: required/);
    assert.deepEqual(validateUpdate({ name: 'x' }, 'auto'), { name: 'x' });
  });

  it('validates the try-it body', () => {
    const input = validateTryIt({ jsonpath: 'data', event: { data: 1 } }, 'auto');
    assert.deepEqual(input.compiled.select(input.event), { values: [1], paths: ["$['data']"] });
    rejects(() => validateTryIt({ jsonpath: '$', event: null }, 'auto'), /^body\.event: must be an object$/);
  });

  it('parses limit and offset', () => {
    assert.deepEqual(parsePage({}), { limit: 100, offset: 0 });
    assert.deepEqual(parsePage({ limit: '1', offset: '0' }), { limit: 1, offset: 0 });
    assert.deepEqual(parsePage({ limit: '1000', offset: '123456' }), { limit: 1000, offset: 123456 });
    assert.deepEqual(parsePage({ limit: '007' }), { limit: 7, offset: 0 });
    for (const limit of ['0', '1001', '-1', '+1', '1e2', ' 1', '0x10', ''])
      rejects(() => parsePage({ limit }), /^querystring\.limit: must be an integer from 1 to 1000$/);
    for (const offset of ['-1', 'x', '1.0', '99999999999999999'])
      rejects(() => parsePage({ offset }), /^querystring\.offset: must be an integer of at least 0$/);
  });

  it('recognizes uuids in any case', () => {
    assert.equal(canonicalUuid('6F1C2D3E-4B5A-4C6D-8E7F-8091A2B3C4D5'), '6f1c2d3e-4b5a-4c6d-8e7f-8091a2b3c4d5');
    for (const text of [
      '',
      'x',
      '6f1c2d3e4b5a4c6d8e7f8091a2b3c4d5',
      '6f1c2d3e-4b5a-4c6d-8e7f-8091a2b3c4d5 ',
      '{6f1c2d3e-4b5a-4c6d-8e7f-8091a2b3c4d5}',
    ]) {
      assert.equal(canonicalUuid(text), undefined, text);
    }
  });
});

describe('subscription input: broker target URLs', () => {
  it('accepts AMQP URLs, and reads from them the lane, virtual host and route delivery uses', () => {
    const cases: Array<[string, { lane: string; scope: string; route: Record<string, string> }]> = [
      ['amqp://127.0.0.1/?routing_key=jobs', { lane: 'amqp://127.0.0.1:5672', scope: '/', route: { exchange: '', routingKey: 'jobs' } }],
      ['amqp://rabbit.example', { lane: '', scope: '', route: {} }],
      [
        'AMQP://Rabbit.Example:5673/facility?exchange=events&routing_key=files.new',
        { lane: 'amqp://rabbit.example:5673', scope: 'facility', route: { exchange: 'events', routingKey: 'files.new' } },
      ],
      ['amqp://h/%2F?exchange=fan', { lane: 'amqp://h:5672', scope: '/', route: { exchange: 'fan', routingKey: '' } }],
      ['amqp://[::1]:5672/?routing_key=a%23b+c', { lane: 'amqp://[::1]:5672', scope: '/', route: { exchange: '', routingKey: 'a#b+c' } }],
      ['amqp://h/v%C3%A4?exchange=&routing_key=q', { lane: 'amqp://h:5672', scope: 'vä', route: { exchange: '', routingKey: 'q' } }],
    ];
    for (const [url, read] of cases) {
      if (read.lane === '') {
        rejects(() => validateCreate({ ...valid, target_url: url }, 'auto'), /routing_key is required without an exchange/);
        continue;
      }
      assert.equal(validateCreate({ ...valid, target_url: url }, 'auto').target_url, url, 'kept as written');
      const { lane, scope, route } = readBrokerTarget(url);
      assert.deepEqual({ lane, scope, route }, read, url);
    }
  });

  it('refuses what an AMQP URL must not be, naming body.target_url and what to do', () => {
    const refused: Array<[string, RegExp]> = [
      ['amqp://guest:guest@h/?routing_key=q', /^body\.target_url: must not contain credentials; put them in auth \(basic\)$/],
      ['amqp://guest@h/?routing_key=q', /must not contain credentials/],
      ['amqp://h/', /^body\.target_url: routing_key is required without an exchange: the default exchange routes it to the queue/],
      ['amqp://h/?exchange=', /routing_key is required without an exchange/],
      ['amqp://h/?routing_key=q&vhost=x', /^body\.target_url: unknown query parameter "vhost": only exchange and routing_key are read$/],
      ['amqp://h/?routing_key=q&routing_key=r', /the query parameter routing_key is given twice/],
      ['amqp://h/?routing_key=orders.#', /must not contain a fragment \(#\); write a # of a name or key as %23/],
      ['amqp://h/a/b?routing_key=q', /the path is the virtual host: one segment \(write a \/ in its name as %2F\)/],
      ['amqp://h/?routing_key=%E0', /routing_key has a % that does not start an escape of UTF-8/],
      [`amqp://h/?routing_key=${'k'.repeat(256)}`, /routing_key is at most 255 bytes \(found 256\)/],
      ['amqp://h:0/?routing_key=q', /the port must be from 1 to 65535/],
      ['amqp:///?routing_key=q', /names no host: write it as amqp:\/\/host\[:port\]\/\[vhost\]\?exchange=X&routing_key=K/],
      ['amqp:h?routing_key=q', /names no host/],
      ['amqp://h%41/?routing_key=q', /the host "h%41" is not a host name or an IP address/],
      ['amqps://h/?routing_key=q', /^body\.target_url: must be an http, https, amqp, mqtt, nats or redis URL, not amqps$/],
    ];
    for (const [url, message] of refused) rejects(() => validateCreate({ ...valid, target_url: url }, 'auto'), message);
  });

  it('accepts Redis URLs, and reads from them the lane and the stream key delivery uses', () => {
    const cases: Array<[string, { lane: string; scope: string; route: Record<string, string> }]> = [
      ['redis://127.0.0.1/events', { lane: 'redis://127.0.0.1:6379', scope: '', route: { key: 'events' } }],
      ['REDIS://Cache.Example:6380/app:events', { lane: 'redis://cache.example:6380', scope: '', route: { key: 'app:events' } }],
      ['redis://[::1]/a%2Fb%20c%C3%A9%23', { lane: 'redis://[::1]:6379', scope: '', route: { key: 'a/b cé#' } }],
    ];
    for (const [url, read] of cases) {
      assert.equal(validateCreate({ ...valid, target_url: url }, 'auto').target_url, url, 'kept as written');
      const { lane, scope, route } = readBrokerTarget(url);
      assert.deepEqual({ lane, scope, route }, read, url);
    }
  });

  it('refuses what a Redis URL must not be, naming body.target_url and what to do', () => {
    const refused: Array<[string, RegExp]> = [
      ['redis://user:pw@h/k', /^body\.target_url: must not contain credentials; put them in auth \(basic\)$/],
      ['redis://:pw@h/k', /must not contain credentials/],
      ['redis://h', /^body\.target_url: names no stream key: write it as redis:\/\/host\[:port\]\/KEY$/],
      ['redis://h/', /names no stream key/],
      [
        'redis://h/0/k',
        /^body\.target_url: the path is the stream key: one segment \(write a \/ in the key as %2F; the database is always 0\)$/,
      ],
      ['redis://h/k?db=1', /^body\.target_url: takes no query: the path is the stream key$/],
      ['redis://h/k?', /takes no query/],
      ['redis://h/k#x', /must not contain a fragment/],
      ['redis://h/%E0', /the stream key has a % that does not start an escape of UTF-8/],
      ['redis:///k', /names no host: write it as redis:\/\/host\[:port\]\/KEY/],
      ['rediss://h/k', /^body\.target_url: must be an http, https, amqp, mqtt, nats or redis URL, not rediss$/],
    ];
    for (const [url, message] of refused) rejects(() => validateCreate({ ...valid, target_url: url }, 'auto'), message);
  });

  it('accepts NATS URLs, reading the subject from the path, and refuses what cannot be published to', () => {
    const accepted: Array<[string, { lane: string; subject: string }]> = [
      ['nats://127.0.0.1/orders.new', { lane: 'nats://127.0.0.1:4222', subject: 'orders.new' }],
      ['NATS://Nats.Example:4333/a.b-c_d.%C3%A4', { lane: 'nats://nats.example:4333', subject: 'a.b-c_d.ä' }],
      ['nats://[::1]/x', { lane: 'nats://[::1]:4222', subject: 'x' }],
    ];
    for (const [url, read] of accepted) {
      assert.equal(validateCreate({ ...valid, target_url: url }, 'auto').target_url, url, 'kept as written');
      const { lane, scope, route } = readBrokerTarget(url);
      assert.deepEqual({ lane, scope, route }, { lane: read.lane, scope: '', route: { subject: read.subject } }, url);
    }
    const refused: Array<[string, RegExp]> = [
      ['nats://h', /^body\.target_url: names no subject: write it as the path, nats:\/\/host\[:port\]\/SUBJECT$/],
      ['nats://h/', /names no subject/],
      ['nats://h/a/b', /the path is the subject: one segment \(tokens are separated by dots\)/],
      ['nats://h/a.*.c', /the subject "a\.\*\.c" has a wildcard: publish to one subject/],
      ['nats://h/a.>', /has a wildcard/],
      ['nats://h/a..b', /the subject "a\.\.b" has an empty token or white space/],
      ['nats://h/.a', /has an empty token or white space/],
      ['nats://h/a%20b', /the subject "a b" has an empty token or white space/],
      ['nats://h/a%E0', /the subject has a % that does not start an escape of UTF-8/],
      ['nats://h/a?stream=s', /^body\.target_url: takes no query parameters: the path is the subject$/],
      ['nats://u:p@h/a', /must not contain credentials; put them in auth \(basic\)/],
      ['nats://h/a#b', /must not contain a fragment/],
    ];
    for (const [url, message] of refused) rejects(() => validateCreate({ ...valid, target_url: url }, 'auto'), message);
  });

  it('accepts MQTT URLs: the path is the topic, percent-decoded, its levels kept', () => {
    const cases: Array<[string, { lane: string; scope: string; route: Record<string, string> }]> = [
      ['mqtt://127.0.0.1/orders', { lane: 'mqtt://127.0.0.1:1883', scope: '', route: { topic: 'orders' } }],
      [
        'MQTT://Broker.Example:8883/orders/created/eu',
        { lane: 'mqtt://broker.example:8883', scope: '', route: { topic: 'orders/created/eu' } },
      ],
      ['mqtt://h/a%2Fb/v%C3%A4%20x', { lane: 'mqtt://h:1883', scope: '', route: { topic: 'a/b/vä x' } }],
      ['mqtt://h/a//b/', { lane: 'mqtt://h:1883', scope: '', route: { topic: 'a//b/' } }],
    ];
    for (const [url, read] of cases) {
      assert.equal(validateCreate({ ...valid, target_url: url }, 'auto').target_url, url, 'kept as written');
      const { lane, scope, route } = readBrokerTarget(url);
      assert.deepEqual({ lane, scope, route }, read, url);
    }
  });

  it('refuses what an MQTT URL must not be, naming body.target_url', () => {
    const refused: Array<[string, RegExp]> = [
      ['mqtt://h', /^body\.target_url: names no topic: write it as the path, mqtt:\/\/host\[:port\]\/TOPIC$/],
      ['mqtt://h/', /^body\.target_url: names no topic/],
      [
        'mqtt://h/a/+/b',
        /^body\.target_url: the topic "a\/\+\/b" has a wildcard \(\+ or #\): a message is published to one topic, not a filter$/,
      ],
      ['mqtt://h/a/%2B', /the topic "a\/\+" has a wildcard/],
      ['mqtt://h/a/%23', /the topic "a\/#" has a wildcard/],
      ['mqtt://h/a/#', /must not contain a fragment/],
      ['mqtt://h/%24SYS/x', /^body\.target_url: the topic "\$SYS\/x" starts with \$: those are the broker's own topics$/],
      ['mqtt://h/a?qos=2', /^body\.target_url: an MQTT URL has no query: the topic is the path$/],
      ['mqtt://h/a%00b', /the topic must not contain a NUL character/],
      ['mqtt://h/%E0', /the topic has a % that does not start an escape of UTF-8/],
      ['mqtt://u:p@h/a', /must not contain credentials; put them in auth \(basic\)/],
      ['mqtts://h/a', /^body\.target_url: must be an http, https, amqp, mqtt, nats or redis URL, not mqtts$/],
    ];
    for (const [url, message] of refused) rejects(() => validateCreate({ ...valid, target_url: url }, 'auto'), message);
    // Past the 2,048 characters of a target_url: for a URL read at delivery.
    assert.throws(() => readBrokerTarget(`mqtt://h/${'é'.repeat(32_768)}`), /the topic is at most 65535 bytes \(found 65536\)/);
  });

  it('takes basic credentials or none for a broker, never an Authorization header', () => {
    const url = 'amqp://h/?routing_key=q';
    const basic = { type: 'basic', basic: { username: 'publisher', password: 's3cret' } };
    assert.deepEqual(validateCreate({ ...valid, target_url: url, auth: basic }, 'auto').auth, basic);
    assert.deepEqual(validateCreate({ ...valid, target_url: url, auth: {} }, 'auto').auth, {});
    const header = { type: 'header', header: { type: 'Bearer', credentials: 't' } };
    rejects(() => validateCreate({ ...valid, target_url: url, auth: header }, 'auto'), /^body\.auth\.type: must be "basic"/);
    assert.deepEqual(validateCreate({ ...valid, auth: header }, 'auto').auth, header, 'an HTTP target takes it');
  });
});
