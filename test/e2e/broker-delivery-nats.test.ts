/**
 * NATS JetStream destinations end to end, as broker-delivery.test.ts does it for AMQP: the server
 * as a process, the shared NATS server on 127.0.0.1:4222 (a stream of the test's own, reached
 * through a TCP proxy where the test cuts or stops it), on every database. The NATS server
 * itself is never stopped or restarted. It asks for no password: logins are tested on a
 * nats-server of the test's own that does (password-brokers.ts).
 */
import assert from 'node:assert/strict';
import { it, type TestContext } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { brokerScene, event, exactBody, itReconnectsAfterCuts, itSurvivesTheBrokerDown } from '../support/broker-e2e.js';
import { describeOn, testBackends } from '../support/database.js';
import { eventually } from '../support/http-stub.js';
import { NATS_PORT, NATS_SKIP, natsStream } from '../support/nats.js';
import { NATS_SERVER_SKIP, startNatsWithPassword } from '../support/password-brokers.js';

for (const backend of testBackends()) {
  describeOn(backend, `broker destinations: NATS JetStream (${backend.name})`, () => {
    const scene = brokerScene(backend);
    const { subscribe, record, send } = scene;

    it(
      'publishes each event as sent: exact bytes, content type, signed with the subscription secret, recorded delivered',
      { skip: NATS_SKIP },
      async (t: TestContext) => {
        const stream = await natsStream(t);
        const source = '/exact';
        const subscription = await subscribe(`nats://127.0.0.1:${NATS_PORT}/${stream.subject()}`, source, {
          auth: { type: 'basic', basic: { username: 'notifier', password: 's3cret' } },
        });
        const body = exactBody(source);
        await send(body, 1);
        const [message] = await stream.received(1);
        assert.ok(Buffer.from(message!.data).equals(Buffer.from(body, 'utf8')), 'the exact bytes');
        assert.equal(message!.header.get('Content-Type'), 'application/cloudevents+json; charset=utf-8');
        const headers = Object.fromEntries(
          ['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((n) => [n, message!.header.get(n)]),
        );
        assert.doesNotThrow(() => new Webhook(subscription.secret).verify(body, headers));
        assert.equal(message!.header.get('Nats-Msg-Id'), headers['webhook-id']);

        const [delivery] = await scene.delivered(subscription.uuid);
        assert.equal(delivery!.elm, headers['webhook-id']);
        assert.deepEqual(
          delivery!.attempts.map(({ status, error }) => ({ status, error })),
          [{ status: null, error: null }],
        );
      },
    );

    it(
      'a subject no stream holds fails at once and disables the subscription, naming the subject',
      { skip: NATS_SKIP },
      async (t: TestContext) => {
        const stream = await natsStream(t);
        const unheld = stream.unheldSubject();
        const subscription = await subscribe(`nats://127.0.0.1/${unheld}`, '/unheld');
        await send(event('/unheld', 'u1'));
        await eventually(async () => (await record(subscription.uuid)).disabled !== null, 'disabled');
        assert.equal((await record(subscription.uuid)).error, `no stream holds subject "${unheld}" (no responders)`);
      },
    );

    it(
      'to a server that asks for a password: the right one delivers; a wrong one is refused for good, the subscription disabled with what the server said',
      { skip: NATS_SERVER_SKIP },
      async (t: TestContext) => {
        const server = await startNatsWithPassword(t);
        // The test's own reader logs in with the right password too.
        const stream = await natsStream(t, server);
        const login = (password: string) => ({ auth: { type: 'basic', basic: { username: server.username, password } } });
        const right = await subscribe(`nats://127.0.0.1:${server.port}/${stream.subject('right')}`, '/login-right', login(server.password));
        const wrong = await subscribe(
          `nats://127.0.0.1:${server.port}/${stream.subject('wrong')}`,
          '/login-wrong',
          login(`${server.password}-not`),
        );
        const body = event('/login-right', 'r1');
        await send(body, 1);
        await send(event('/login-wrong', 'w1'), 1);

        const [message] = await stream.received(1);
        assert.equal(message!.subject, stream.subject('right'));
        assert.equal(Buffer.from(message!.data).toString('utf8'), body);
        const [delivered] = await scene.delivered(right.uuid);
        assert.deepEqual(
          delivered!.attempts.map(({ status, error }) => ({ status, error })),
          [{ status: null, error: null }],
        );

        await eventually(async () => (await record(wrong.uuid)).disabled !== null, 'the subscription with the wrong password disabled');
        const refused = "the server refused the connection: 'Authorization Violation'";
        assert.equal((await record(wrong.uuid)).error, refused);
        const [failed, ...more] = await scene.history(wrong.uuid);
        assert.deepEqual(
          [more.length, failed!.state, failed!.attempts.map(({ status, error }) => ({ status, error }))],
          [0, 'failed', [{ status: null, error: refused }]],
        );
        assert.equal(await stream.count(), 1, 'nothing published with the wrong password');
        assert.equal((await record(right.uuid)).disabled, null);
      },
    );

    itReconnectsAfterCuts(
      scene,
      NATS_PORT,
      async (t, proxyPort) => {
        const stream = await natsStream(t);
        return {
          url: `nats://127.0.0.1:${proxyPort}/${stream.subject()}`,
          received: async (count, timeoutMs) => (await stream.received(count, timeoutMs)).map((m) => Buffer.from(m.data).toString('utf8')),
        };
      },
      // Nats-Msg-Id: the stream drops what a delivery sent again.
      { once: true, skip: NATS_SKIP },
    );

    itSurvivesTheBrokerDown(scene, 'NATS', (port) => `nats://127.0.0.1:${port}/a.b`);
  });
}
