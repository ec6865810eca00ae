/**
 * MQTT destinations end to end: the server as a process, the shared Mosquitto on 127.0.0.1:1883
 * (received by a real subscriber at QoS 1 on the test's own topic, through a TCP proxy where the
 * test cuts or stops it), an HTTP target beside it, on every database. The broker itself is never
 * stopped or restarted. It takes anonymous logins: logins are tested on a Mosquitto of the test's
 * own that asks for a password (password-brokers.ts).
 */
import assert from 'node:assert/strict';
import { it, type TestContext } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { brokerScene, event, exactBody, itReconnectsAfterCuts, itSurvivesTheBrokerDown, USER } from '../support/broker-e2e.js';
import { describeOn, testBackends } from '../support/database.js';
import { eventually } from '../support/http-stub.js';
import { MOSQUITTO_PORT, MOSQUITTO_SKIP, mqttTopic } from '../support/mosquitto.js';
import { MOSQUITTO_PROGRAMS_SKIP, startMosquittoWithPassword } from '../support/password-brokers.js';

for (const backend of testBackends()) {
  describeOn(backend, `broker destinations: MQTT (${backend.name})`, () => {
    const scene = brokerScene(backend);
    const { subscribe, record, send, stub } = scene;

    it(
      'publishes each event as HTTP gets it: exact bytes, content type, signed with the subscription secret; recorded delivered',
      { skip: MOSQUITTO_SKIP },
      async (t: TestContext) => {
        const topic = await mqttTopic(t);
        const http = await stub();
        const source = '/exact';
        const withTag = { extensions: { tag: 'é✓' } };
        const mqtt = await subscribe(`mqtt://127.0.0.1:${MOSQUITTO_PORT}/${topic.name}`, source, {
          ...withTag,
          auth: { type: 'basic', basic: { username: 'notifications', password: 'unused-here' } },
        });
        await subscribe(http.url, source, withTag);
        const body = exactBody(source);
        await send(body, 2);
        await topic.received(1);
        await eventually(() => http.requests.length === 1, 'the HTTP target has it');

        const [{ payload, packet }] = topic.messages as [(typeof topic.messages)[0]];
        assert.equal(payload.toString('utf8'), http.requests[0]!.body, 'with its extensions, the very body HTTP gets');
        assert.ok(payload.equals(Buffer.from(http.requests[0]!.body, 'utf8')), 'the exact bytes');
        assert.equal(packet.qos, 1);
        assert.equal(packet.properties?.contentType, http.requests[0]!.headers['content-type']);
        const headers = packet.properties?.userProperties as Record<string, string>;
        assert.doesNotThrow(() => new Webhook(mqtt.secret).verify(payload.toString('utf8'), headers));

        const [delivery] = await scene.delivered(mqtt.uuid);
        assert.equal(headers['webhook-id'], delivery!.elm);
        assert.deepEqual([delivery!.target, delivery!.attempts.map((a) => a.status)], [null, [null]]);
      },
    );

    it(
      'to a broker that asks for a password: the right one delivers; a wrong one is refused for good, the subscription disabled with what the broker said',
      { skip: MOSQUITTO_PROGRAMS_SKIP },
      async (t: TestContext) => {
        const broker = await startMosquittoWithPassword(t);
        // The test's own subscriber logs in with the right password, to both topics.
        const [rightTopic, wrongTopic] = [await mqttTopic(t, broker), await mqttTopic(t, broker)];
        const login = (password: string) => ({ auth: { type: 'basic', basic: { username: broker.username, password } } });
        const right = await subscribe(`mqtt://127.0.0.1:${broker.port}/${rightTopic.name}`, '/login-right', login(broker.password));
        const wrong = await subscribe(
          `mqtt://127.0.0.1:${broker.port}/${wrongTopic.name}`,
          '/login-wrong',
          login(`${broker.password}-not`),
        );
        const body = event('/login-right', 'r1');
        await send(body, 1);
        await send(event('/login-wrong', 'w1'), 1);

        await rightTopic.received(1);
        assert.equal(rightTopic.messages[0]!.payload.toString('utf8'), body);
        const [delivered] = await scene.delivered(right.uuid);
        assert.deepEqual(
          delivered!.attempts.map(({ status, error }) => ({ status, error })),
          [{ status: null, error: null }],
        );

        await eventually(async () => (await record(wrong.uuid)).disabled !== null, 'the subscription with the wrong password disabled');
        const refused = 'the broker refused the connection: Not authorized (135)';
        assert.equal((await record(wrong.uuid)).error, refused);
        const [failed, ...more] = await scene.history(wrong.uuid);
        assert.deepEqual(
          [more.length, failed!.state, failed!.attempts.map(({ status, error }) => ({ status, error }))],
          [0, 'failed', [{ status: null, error: refused }]],
        );
        assert.equal(wrongTopic.messages.length, 0, 'nothing published with the wrong password');
        assert.equal((await record(right.uuid)).disabled, null);
      },
    );

    it('a topic with a wildcard is refused at the write, naming body.target_url', async () => {
      const answer = await fetch(`${scene.server.url}/eventmatch`, {
        method: 'POST',
        headers: { ...USER, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'w', jsonpath: '$', target_url: 'mqtt://127.0.0.1/files/%23' }),
      });
      assert.equal(answer.status, 400);
      assert.match(((await answer.json()) as { message: string }).message, /^body\.target_url: the topic "files\/#" has a wildcard/);
    });

    itReconnectsAfterCuts(
      scene,
      MOSQUITTO_PORT,
      async (t, proxyPort) => {
        const topic = await mqttTopic(t);
        return {
          url: `mqtt://127.0.0.1:${proxyPort}/${topic.name}`,
          received: async (count, timeoutMs) => {
            await topic.received(count, timeoutMs);
            return topic.messages.map((m) => m.payload.toString('utf8'));
          },
        };
      },
      { skip: MOSQUITTO_SKIP },
    );

    itSurvivesTheBrokerDown(scene, 'Mosquitto', (port) => `mqtt://127.0.0.1:${port}/down`);
  });
}
