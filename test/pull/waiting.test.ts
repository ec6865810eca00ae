/**
 * Many idle long polls on one instance, in-process so that the database's statements can be
 * counted (a Kysely plugin on the reader's connection) and the waiters seen: while they wait,
 * no statement is sent, and a client that goes away leaves no waiter behind. On both databases.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { PullWaiters } from '../../src/pull/waiters.js';
import { describeOn, openTestDatabase, testBackends } from '../support/database.js';
import { eventually } from '../support/http-stub.js';
import { type PullApp, startPullApp } from '../support/pull-app.js';

const POLLS = 500;

for (const backend of testBackends()) {
  describeOn(backend, `idle long polls (${backend.name})`, () => {
    let test: Awaited<ReturnType<typeof openTestDatabase>>;
    let pulls: PullApp;
    const waiters = new PullWaiters();

    before(async () => {
      test = await openTestDatabase(backend);
      pulls = await startPullApp(test.handle, waiters);
    });
    after(async () => {
      await pulls?.app.close();
      await test?.close();
    });

    it(`${POLLS} waiting long polls send no statement, and each client that leaves takes its waiter along`, async (t) => {
      const uuid = await pulls.subscribe('alice');
      const heapBefore = process.memoryUsage().heapUsed;
      const clients = Array.from({ length: POLLS }, () => new AbortController());
      const polls = clients.map((client) =>
        fetch(`${pulls.url}/eventmatch/${uuid}/events?wait=60`, { headers: { 'http-remote-user': 'alice' }, signal: client.signal }).then(
          () => 'answered',
          () => 'aborted',
        ),
      );
      await eventually(() => waiters.size === POLLS, `${POLLS} waiters`, 30_000);
      const heapWaiting = process.memoryUsage().heapUsed;
      const before = pulls.statements();
      // A measurement over a window: what the idle waits cost.
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      const idle = pulls.statements() - before;
      t.diagnostic(
        `${POLLS} long polls: ${before} statements to set them up (one subscription lookup and one read each), ${idle} in 2 s of waiting; ` +
          `heap ${((heapWaiting - heapBefore) / 1024 / 1024).toFixed(1)} MiB more with them waiting (clients and server in one process)`,
      );
      assert.equal(idle, 0, 'no statement while they wait');
      // Half the clients go away: their waiters go, the others stay.
      for (const client of clients.slice(0, POLLS / 2)) client.abort();
      await eventually(() => waiters.size === POLLS / 2, 'the waiters of the clients that left are gone');
      for (const client of clients.slice(POLLS / 2)) client.abort();
      await eventually(() => waiters.size === 0, 'no waiter left');
      assert.deepEqual(new Set(await Promise.all(polls)), new Set(['aborted']));
    });
  });
}
