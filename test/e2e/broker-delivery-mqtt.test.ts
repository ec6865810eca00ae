/**
 * MQTT destinations end to end: the server as a process, the shared Mosquitto on 127.0.0.1:1883
 * (received by a real subscriber at QoS 1 on the test's own topic, through a TCP proxy where the
 * test cuts or stops it), an HTTP target beside it, on every database. The broker itself is never
 * stopped or restarted.
 */
import assert from 'node:assert/strict';
import { it, type TestContext } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { brokerScene, exactBody, itReconnectsAfterCuts, itSurvivesTheBrokerDown, USER } from '../support/broker-e2e.js';
import { describeOn, testBackends } from '../support/database.js';
import { eventually } from '../support/http-stub.js';
import { MOSQUITTO_PORT, MOSQUITTO_SKIP, mqttTopic } from '../support/mosquitto.js';

for (const backend of testBackends()) {
  describeOn(backend, `broker destinations: MQTT (${backend.name})`, () => {
    const scene = brokerScene(backend);
    const { subscribe, send, stub } = scene;

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

    itSurvivesTheBrokerDown(scene, MOSQUITTO_PORT, 'Mosquitto', (proxyPort) => `mqtt://127.0.0.1:${proxyPort}/down`);
  });
}
