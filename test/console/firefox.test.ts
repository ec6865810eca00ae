/**
 * The web console in Debian's Firefox ESR, driven over WebDriver BiDi (test/support/firefox.ts):
 * its modules load and run under the page's Content-Security-Policy, the list, a subscription
 * with its delivery and attempts, and the JSONPath tester work, and nothing is refused or
 * thrown. The flows themselves, the keyboard, axe and both databases are tested in Chromium
 * (browser.test.ts); this is the same console in the other engine, on SQLite, since the pages do
 * not depend on the database.
 */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, it } from 'node:test';
import { SCREENSHOTS } from '../support/browser.js';
import { createSqlite, describeOn, type TestDatabase, testBackends } from '../support/database.js';
import { type Firefox, FIREFOX_SKIP, launchFirefox } from '../support/firefox.js';
import { eventually, type HttpStub, reply, startStub } from '../support/http-stub.js';
import { type RunningServer, runCli, startServer } from '../support/processes.js';
import { facilityEventText } from '../support/fixtures.js';

const NAME = 'Text files (Firefox)';
const sqlite = testBackends().find((backend) => backend.name === 'sqlite')!;

describeOn({ skip: sqlite.skip || FIREFOX_SKIP }, 'the web console in Firefox', () => {
  let database: TestDatabase;
  let server: RunningServer;
  let target: HttpStub;
  let firefox: Firefox;
  let uuid = '';

  before(async () => {
    database = await createSqlite();
    assert.equal((await runCli(['--database-url', database.url, 'dbsync'])).code, 0);
    target = await startStub(reply(204));
    // Firefox's requests carry no identity header: the default user stands in for the front proxy.
    server = await startServer({ NOTIFICATIONS_DATABASE_URL: database.url, NOTIFICATIONS_DEFAULT_USER: 'alice' });
    firefox = await launchFirefox();
    await firefox.setViewport(1280, 900);

    const created = await fetch(`${server.url}/eventmatch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: NAME, jsonpath: '$.data[?@.mimetype == "text/plain"]', target_url: `${target.url}/hook` }),
    });
    assert.equal(created.status, 200, await created.clone().text());
    uuid = ((await created.json()) as { uuid: string }).uuid;
    const received = await fetch(`${server.url}/receive`, {
      method: 'POST',
      headers: { 'content-type': 'application/cloudevents+json; charset=utf-8' },
      body: facilityEventText(),
    });
    assert.equal(received.status, 200);
    await eventually(() => target.requests.length === 1, 'the event is delivered');
  });
  after(async () => {
    await firefox?.close();
    await server?.stop();
    await target?.close();
    await database?.cleanup();
  });

  const text = () => firefox.evaluate<string>('document.body.innerText');
  const shows = (what: string[]) =>
    eventually(
      async () => {
        const shown = await text();
        return what.every((s) => shown.includes(s));
      },
      `the page shows ${what.join(', ')}`,
    );
  async function keep(name: string): Promise<void> {
    mkdirSync(SCREENSHOTS, { recursive: true });
    writeFileSync(join(SCREENSHOTS, `firefox-${name}-1280.png`), await firefox.screenshot());
  }

  it('lists the subscription', async () => {
    await firefox.open(`${server.url}/console/`);
    await shows([NAME, 'Active', `${target.url}/hook`]);
    await keep('subscriptions');
  });

  it("shows the subscription's delivery and its attempt", async () => {
    await firefox.open(`${server.url}/console/#/subscriptions/${uuid}`);
    await shows([NAME, 'C234-1234-1234', 'Delivered', 'HTTP 204']);
    await keep('subscription');
  });

  it('tries a JSONPath on the facility event as it is typed, and marks a bad one', async () => {
    await firefox.open(`${server.url}/console/#/tester`);
    await shows(['JSONPath tester']);
    // As typing does: the value set, then an input event (Preact listens for those).
    const type = (id: string, value: string) =>
      firefox.evaluate(`(() => {
        const field = document.getElementById(${JSON.stringify(id)});
        Object.getOwnPropertyDescriptor(HTMLTextAreaElement.prototype, 'value').set.call(field, ${JSON.stringify(value)});
        field.dispatchEvent(new Event('input', { bubbles: true }));
        return true;
      })()`);
    await type('tester-event', facilityEventText());
    await type('tester-jsonpath', '$.data[?@.destinationTable == "Files"].name');
    await shows(['Matches', '3 values selected', '"foo.txt"', "$['data'][7]['name']"]);
    await keep('tester');
    await type('tester-jsonpath', '$.data[?@.size >');
    await shows(['Invalid JSONPath']);
  });

  it('logs no error and nothing its Content-Security-Policy refused', () => {
    const problems = firefox.logs.filter((entry) => entry.level === 'error' || /Content[- ]Security[- ]Policy/i.test(entry.text));
    assert.deepEqual(problems, []);
  });
});
