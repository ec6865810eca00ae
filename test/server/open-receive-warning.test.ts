/**
 * A server that listens beyond loopback with /receive open to all (neither
 * NOTIFICATIONS_RECEIVE_TOKEN nor NOTIFICATIONS_RECEIVE_ALLOW) says so once at start-up.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { eventually } from '../support/http-stub.js';
import { type RunningServer, startServer } from '../support/processes.js';

const WARNING = /"level":40.*open \/receive.*NOTIFICATIONS_RECEIVE_TOKEN.*NOTIFICATIONS_RECEIVE_ALLOW/;

/** The log of a server started with `env`, up to the line saying it listens (after every start-up line). */
async function startupLog(env: Record<string, string>): Promise<string> {
  let server: RunningServer | undefined;
  try {
    server = await startServer({ NOTIFICATIONS_DATABASE_URL: 'sqlite::memory:', ...env });
    const running = server;
    await eventually(() => running.logs().includes('Server listening'), 'the server says it listens');
    return running.logs();
  } finally {
    assert.equal(await server?.stop(), 0);
  }
}

describe('the open /receive warning', () => {
  it('is given once, naming both settings, by a server listening on every address with neither', async () => {
    const log = await startupLog({ NOTIFICATIONS_ADDRESS: '0.0.0.0' });
    assert.equal(log.split('\n').filter((line) => WARNING.test(line)).length, 1, log);
    assert.match(log, /listening on 0\.0\.0\.0, beyond loopback/);
  });

  it('is not given on loopback, with a token, or with an allow-list', async () => {
    const cases: Array<Record<string, string>> = [
      { NOTIFICATIONS_ADDRESS: '127.0.0.1' },
      { NOTIFICATIONS_ADDRESS: '0.0.0.0', NOTIFICATIONS_RECEIVE_TOKEN: 'a-token' },
      { NOTIFICATIONS_ADDRESS: '0.0.0.0', NOTIFICATIONS_RECEIVE_ALLOW: '10.0.0.0/8' },
    ];
    for (const env of cases) {
      const log = await startupLog(env);
      assert.doesNotMatch(log, /open \/receive/, JSON.stringify(env));
    }
  });
});
