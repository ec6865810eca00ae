/**
 * Issue 13: events made and read by the official CloudEvents JavaScript SDK (10.0.0) go through
 * the built server to real targets unchanged, in structured, binary and batched mode, on every
 * database. What the SDK reads from each delivery must equal what it reads from what was sent,
 * plus the subscription's extension; `data` written by hand with numbers JSON.parse would
 * change must arrive as the very text that was sent.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { CloudEvent, HTTP, type Message } from 'cloudevents';
import { describeOn, testBackends } from '../support/database.js';
import { eventually, type HttpStub, startStub, type StubRequest } from '../support/http-stub.js';
import { serverOn } from '../support/server-on.js';

const SOURCE = '/sdk-e2e';
const EXTENSION = { tenant: 'lab1' };
const EXACT_DATA = '{"big":12345678901234567890,"f":1.50,"e":1e2,"neg":-0.0,"nested":{"a":[1.0,2.50e-3,"\\u00e9\\"]"]}}';
const CE_JSON = 'application/cloudevents+json; charset=utf-8';

interface Sending {
  what: string;
  message: Message;
  /** The `data` text each event of the message must be delivered with, by id. */
  exactData?: Record<string, string>;
}

function event(id: string, attributes: Record<string, unknown>): CloudEvent {
  return new CloudEvent({ id, source: SOURCE, type: 'org.example.sdk', time: '2024-05-06T07:08:09.123Z', ...attributes });
}

/** SDK events, each sent in structured and in binary mode, in each version the SDK supports. */
function sdkSendings(): Sending[] {
  const sendings: Sending[] = [];
  for (const specversion of ['1.0', '0.3'] as const) {
    const v = specversion.replace('.', '');
    const events = [
      event(`string-${v}`, { specversion, datacontenttype: 'text/plain', data: 'plain text, "quoted" ünïcödé 😀' }),
      event(`object-${v}`, { specversion, data: { n: 1, f: 1.5, big: 2 ** 53 - 1, s: 'é\n"', ok: true, none: null } }),
      event(`array-${v}`, { specversion, datacontenttype: 'application/json', data: [1, 'two', [3, [4]], { five: 5 }] }),
      // ASCII: the SDK does not percent-encode headers (HTTP binding 3.1.3.2), so in binary mode
      // a non-ASCII subject would reach us as latin1 bytes, which are refused as not UTF-8.
      event(`nested-${v}`, { specversion, data: { a: { b: { c: { d: ['deep', { e: '𝄞' }] } } } }, subject: 'a subject' }),
      event(`bytes-${v}`, { specversion, datacontenttype: 'application/octet-stream', data: Buffer.from([0, 1, 2, 253, 254, 255]) }),
      event(`extensions-${v}`, {
        specversion,
        data: { x: 1 },
        thisextensionnameislongerthantwenty: 'long',
        flag: true,
        count: 42,
        negative: -7,
        text: 'a value',
      }),
      event(`nodata-${v}`, { specversion }),
    ];
    for (const e of events) {
      // The SDK writes binary data in structured mode as data_base64, which 0.3 does not have.
      if (!(specversion === '0.3' && e.id.startsWith('bytes'))) sendings.push({ what: `${e.id} structured`, message: HTTP.structured(e) });
      sendings.push({ what: `${e.id} binary`, message: renamed(HTTP.binary(e), 'binary') });
    }
  }
  return sendings;
}

/** The same event sent twice needs another id the second time: the log refuses duplicates. */
function renamed(message: Message, suffix: string): Message {
  return { ...message, headers: { ...message.headers, 'ce-id': `${String(message.headers['ce-id'])}-${suffix}` } };
}

/** `data` with numbers the SDK's own JSON handling would change, written by hand. */
function exactSendings(): Sending[] {
  const envelope = (id: string, specversion = '1.0') =>
    `{"specversion":"${specversion}","id":"${id}","source":"${SOURCE}","type":"org.example.exact","time":"2024-05-06T07:08:09.123Z","datacontenttype":"application/json"`;
  return [
    {
      what: 'exact numbers, structured 1.0',
      message: { headers: { 'content-type': CE_JSON }, body: `${envelope('exact-s10')},"data":${EXACT_DATA}}` },
      exactData: { 'exact-s10': EXACT_DATA },
    },
    {
      what: 'exact numbers, structured 0.3, spaced out',
      // Not spaced before the object: the SDK reads a body that does not start with { as a string.
      message: { headers: { 'content-type': CE_JSON }, body: `${envelope('exact-s03', '0.3')},\n  "data" : ${EXACT_DATA} \n}\n` },
      exactData: { 'exact-s03': EXACT_DATA },
    },
    {
      what: 'exact numbers, binary 1.0',
      message: {
        headers: {
          'content-type': 'application/json',
          'ce-specversion': '1.0',
          'ce-id': 'exact-b10',
          'ce-source': SOURCE,
          'ce-type': 't',
          'ce-time': '2024-05-06T07:08:09.123Z',
        },
        body: EXACT_DATA,
      },
      exactData: { 'exact-b10': EXACT_DATA },
    },
    {
      what: 'exact numbers, batch',
      message: {
        headers: { 'content-type': 'application/cloudevents-batch+json' },
        body: `[${envelope('exact-batch-1')},"data":${EXACT_DATA}}, ${envelope('exact-batch-2')},"data":[1.10,1E+2]}]`,
      },
      exactData: { 'exact-batch-1': EXACT_DATA, 'exact-batch-2': '[1.10,1E+2]' },
    },
    {
      what: 'SDK events as a batch',
      message: {
        headers: { 'content-type': 'application/cloudevents-batch+json' },
        body: JSON.stringify([
          event('batch-1', { data: { in: 'batch', n: 1.25 }, longerthantwentycharacters: 'x' }),
          event('batch-2', { datacontenttype: 'text/plain', data: 'two' }),
          event('batch-3', { datacontenttype: 'application/octet-stream', data: Buffer.from('three') }),
        ]),
      },
    },
  ];
}

/** What the SDK reads from a message: one event, or several from a batch. */
function read(message: Message): CloudEvent[] {
  const read = HTTP.toEvent(message);
  return (Array.isArray(read) ? read : [read]) as CloudEvent[];
}

/** An event as the SDK sees it, comparable: binary data as its bytes, whatever array type holds them. */
function comparable(e: CloudEvent): Record<string, unknown> {
  const { data, data_base64: _base64, datacontentencoding: _encoding, ...attributes } = { ...e } as Record<string, unknown>;
  const defined = Object.fromEntries(Object.entries(attributes).filter(([, value]) => value !== undefined));
  const bytes = ArrayBuffer.isView(data) ? Buffer.from(data as unknown as ArrayLike<number>).toString('base64') : undefined;
  return { ...defined, data: bytes === undefined ? data : { bytes } };
}

function valid(e: CloudEvent): void {
  // The SDK's validate() checks 1.0 events and answers false for others (it throws on a fault).
  assert.equal(e.validate(), e.specversion === '1.0', `${e.id} validates`);
}

function headersOf(request: StubRequest): Message['headers'] {
  return Object.fromEntries(Object.entries(request.headers).map(([name, value]) => [name, String(value)]));
}

for (const backend of testBackends()) {
  describeOn(backend, `CloudEvents SDK round trip (${backend.name})`, () => {
    let policy: HttpStub;
    let plain: HttpStub;
    let extended: HttpStub;
    before(async () => {
      policy = await startStub();
      plain = await startStub();
      extended = await startStub();
    });

    const server = serverOn(backend, () => ({ NOTIFICATIONS_POLICY_URL: policy.url }));
    before(async () => {
      for (const [target, extensions] of [
        [plain, {}],
        [extended, EXTENSION],
      ] as const) {
        const response = await fetch(`${server.url}/eventmatch`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'http-remote-user': 'sdk' },
          body: JSON.stringify({ name: 'sdk', jsonpath: `$[?$.source == '${SOURCE}']`, target_url: target.url, extensions }),
        });
        assert.equal(response.status, 200, await response.text());
      }
    });
    // Registered after serverOn's: the stubs close once the server has stopped.
    after(async () => {
      for (const stub of [policy, plain, extended]) await stub.close();
    });

    it('delivers every event as the SDK sent it, data text exactly as sent, in every mode and version', async () => {
      const sendings = [...sdkSendings(), ...exactSendings()];
      const expected = new Map<string, { sent: CloudEvent; exactData?: string; what: string }>();
      for (const sending of sendings) {
        // As they go on the wire: the SDK's binary mode leaves numbers and booleans in its headers.
        const headers = Object.fromEntries(Object.entries(sending.message.headers).map(([name, value]) => [name, String(value)]));
        const events = read({ ...sending.message, headers });
        for (const sent of events) expected.set(sent.id, { sent, exactData: sending.exactData?.[sent.id], what: sending.what });
        const sent = sending.message.body;
        const body = sent === undefined || typeof sent === 'string' ? sent : Buffer.from(sent as Uint8Array);
        const answer = await fetch(`${server.url}/receive`, { method: 'POST', headers, body });
        const text = await answer.text();
        assert.equal(answer.status, 200, `${sending.what}: ${text}`);
        const answers = JSON.parse(text) as { matches: number } | { matches: number }[];
        for (const { matches } of Array.isArray(answers) ? answers : [answers]) assert.equal(matches, 2, sending.what);
      }

      await eventually(
        () => plain.requests.length === expected.size && extended.requests.length === expected.size,
        `${expected.size} events delivered to each target`,
        30_000,
      );
      for (const [target, added] of [
        [plain, {}],
        [extended, EXTENSION],
      ] as const) {
        const seen = new Set<string>();
        for (const request of target.requests) {
          const [delivered, ...more] = read({ headers: headersOf(request), body: request.body });
          assert.ok(delivered !== undefined && more.length === 0, 'one event per delivery');
          const wanted = expected.get(delivered.id);
          assert.ok(wanted !== undefined, `an event that was sent: ${delivered.id}`);
          seen.add(delivered.id);
          valid(delivered);
          assert.deepEqual(comparable(delivered), { ...comparable(wanted.sent), ...added }, wanted.what);
          if (wanted.exactData !== undefined) {
            assert.ok(request.body.includes(wanted.exactData), `${wanted.what}: data as sent in ${request.body}`);
          }
        }
        assert.equal(seen.size, expected.size, 'each event delivered once');
      }
    });
  });
}
