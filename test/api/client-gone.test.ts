/**
 * A client that sends less than its Content-Length and closes its connection, to a real server
 * over node:net: answered 400 BODY_INCOMPLETE when it only stopped sending, and never logged as
 * a database that does not answer (Node says ECONNRESET, as the database driver does).
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, it } from 'node:test';
import { describeOn, openTestDatabase, testBackends } from '../support/database.js';
import { eventually } from '../support/http-stub.js';
import { type RunningServer, startServer } from '../support/processes.js';
import { assertErrorShape, exchangeOne } from './raw-http.js';

const GONE = 'the client went away before its request was read whole';

/** Half the body its Content-Length announces. */
const partial = (path: string) =>
  `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nHttp-Remote-User: alice\r\nContent-Type: application/json\r\n` +
  `Content-Length: 100\r\n\r\n{"specversion": "1.0", "id": "cut-`;

/** Sends the partial request, then resets the connection without reading any answer. */
function sendAndReset(port: number, request: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(request, () => setTimeout(() => socket.resetAndDestroy(), 100)));
    socket.on('error', reject);
    socket.on('close', () => resolve());
  });
}

interface LogLine {
  level: number;
  msg: string;
  reqId?: string;
}
const lines = (server: RunningServer): LogLine[] =>
  server
    .logs()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as LogLine);

for (const backend of testBackends()) {
  describeOn(backend, `a client that goes away mid-body (${backend.name})`, () => {
    let test: Awaited<ReturnType<typeof openTestDatabase>>;
    let server: RunningServer;
    before(async () => {
      test = await openTestDatabase(backend);
      server = await startServer({ NOTIFICATIONS_DATABASE_URL: test.database.url, NOTIFICATIONS_LOG_LEVEL: 'debug' });
    });
    after(async () => {
      await server?.stop();
      await test?.close();
    });

    it('is answered 400 BODY_INCOMPLETE or not at all, logged at debug only, and the server serves on', async () => {
      const port = Number(new URL(server.url).port);
      for (const path of ['/receive', '/eventmatch']) {
        const answer = await exchangeOne(port, partial(path), { end: true });
        assertErrorShape(answer, 400, undefined, 'BODY_INCOMPLETE');
        await sendAndReset(port, partial(path));
      }
      // Each of the four logged, as the client's leaving or (as it was) as the database's silence.
      const said = () => lines(server).filter((line) => line.msg === GONE || /not answering/.test(line.msg));
      await eventually(() => said().length === 4, 'the four requests logged');
      assert.doesNotMatch(server.logs(), /not answering/);
      for (const line of said()) assert.equal(line.level, 20, JSON.stringify(line));
      const requestWarnings = lines(server).filter((line) => line.level >= 40 && line.reqId !== undefined);
      assert.deepEqual(requestWarnings, []);

      const received = await fetch(`${server.url}/receive`, {
        method: 'POST',
        headers: { 'content-type': 'application/cloudevents+json' },
        body: JSON.stringify({ specversion: '1.0', id: 'after-the-cut', source: '/client-gone', type: 'org.example.test' }),
      });
      assert.equal(received.status, 200, await received.text());
      const listed = await fetch(`${server.url}/eventmatch`, { headers: { 'http-remote-user': 'alice' } });
      assert.equal(listed.status, 200, await listed.text());
    });
  });
}
