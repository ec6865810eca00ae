/**
 * The web console in a real browser (Debian's Chromium through playwright-core), against the
 * built server as a process, a real target and each database: a subscription made through the
 * form with its JSONPath checked on the facility's event as it is typed, listed, its deliveries
 * and attempts appearing as events arrive, a failed delivery fixed and sent again, the signing
 * secret revealed, copied and rotated, disabled and enabled, deleted; the same with the keyboard
 * alone. Every view passes axe-core without a serious or critical violation, at 1280 px and at
 * 390 px, and is kept as screenshots in test-output/console/ for a person to look at.
 *
 * The browser stands in for a person behind the front proxy: each of its requests carries the
 * identity header, as the proxy would add it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { TARGET_SCHEMES } from '../../src/destinations/kinds.js';
import { describeOn, testBackends } from '../support/database.js';
import { CHROMIUM_SKIP, chromiumForFile, keepFailure, lookAt, tabTo, watchPage, WIDE } from '../support/browser.js';
import { eventually, type HttpStub, type StubAnswer, startStub } from '../support/http-stub.js';
import { facilityEventText, facilityEventTextWithId } from '../support/fixtures.js';
import { serverOn } from '../support/server-on.js';

const USER = 'alice';
const FACILITY_EVENT = facilityEventText();
/** The label of the form's checkbox of `notices`. */
const NOTICES = 'Notices: also send me this service’s notices about my subscriptions (disabled, enabled, failing)';

/** A target that answers 204 on /hook, and 400 with a reason on /broken. */
const target: StubAnswer = (request, response) => {
  if (request.url.startsWith('/broken')) response.writeHead(400, { 'content-type': 'text/plain' }).end('missing field: project');
  else response.writeHead(204).end();
};

const browser = chromiumForFile();

for (const backend of testBackends()) {
  describeOn({ skip: backend.skip || CHROMIUM_SKIP }, `the web console in Chromium (${backend.name})`, () => {
    let stub: HttpStub;
    let context: BrowserContext;
    let page: Page;
    let watch: { problems: string[] };
    /**
     * The axe pass and the screenshots, on SQLite only: the pages are the same whatever the
     * database, and the browser's time is better spent on the flows, which run on both.
     */
    const look = backend.name === 'sqlite' ? lookAt : async () => undefined;
    /** The subscription the tests make through the form. */
    let uuid = '';
    const name = `Text files (${backend.name})`;

    before(async () => {
      stub = await startStub(target);
    });
    // Registered ahead of serverOn's: the browser closes before the server stops; after both, the target.
    after(() => context?.close());
    const server = serverOn(backend, { NOTIFICATIONS_RETRY_DELAYS: '200ms' });
    after(() => stub?.close());
    before(async () => {
      context = await browser().newContext({
        viewport: WIDE,
        extraHTTPHeaders: { 'http-remote-user': USER },
        permissions: ['clipboard-read', 'clipboard-write'],
      });
      context.setDefaultTimeout(30_000);
      page = await context.newPage();
      watch = watchPage(page);
    });
    const api = async <T>(method: string, path: string, body?: string): Promise<T> => {
      const response = await fetch(`${server.url}${path}`, {
        method,
        headers: { 'http-remote-user': USER, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body,
      });
      const text = await response.text();
      assert.ok(response.ok, `${method} ${path}: ${response.status} ${text}`);
      return JSON.parse(text) as T;
    };
    const receive = async (event: string) => {
      const response = await fetch(`${server.url}/receive`, {
        method: 'POST',
        headers: { 'content-type': 'application/cloudevents+json; charset=utf-8' },
        body: event,
      });
      assert.equal(response.status, 200, await response.text());
    };
    const jsonpathField = () => page.getByLabel('JSONPath', { exact: true });
    const delivery = (eventId: string) => page.locator('li.delivery', { has: page.getByRole('heading', { name: `Event ${eventId}` }) });

    it('says who is missing when the request has no identity, in a page that holds no user data', async () => {
      const anonymous = await browser().newContext({ viewport: WIDE });
      try {
        const lost = await anonymous.newPage();
        const problems = watchPage(lost).problems;
        await lost.goto(`${server.url}/console/`);
        await lost.getByRole('alert').getByText('The service does not know who you are').waitFor();
        assert.deepEqual(problems, []);
      } finally {
        await anonymous.close();
      }
    });

    it('shows an empty list, then makes a subscription through the form, its JSONPath tried on the facility’s event as it is typed', async () => {
      await page.goto(`${server.url}/console/`);
      await page.getByText('You have no subscriptions yet.').waitFor();
      await look(page, 'subscriptions-empty');

      await page.getByRole('link', { name: 'New subscription' }).click();
      await page.getByRole('heading', { name: 'New subscription', level: 1 }).waitFor();
      await page.getByLabel('Name', { exact: true }).fill(name);
      await page.getByLabel('Event: one CloudEvent, as JSON').fill(FACILITY_EVENT);

      // Typed key by key: the verdict follows the expression.
      await jsonpathField().pressSequentially('$.data[?@.mimetype == "text/plain"]', { delay: 15 });
      const result = page.locator('.tester-result');
      await result.getByText('Matches', { exact: true }).waitFor();
      await result.getByText('3 values selected · read as RFC 9535').waitFor();
      for (const path of ["$['data'][7]", "$['data'][8]", "$['data'][9]"])
        await result.getByRole('cell', { name: path, exact: true }).waitFor();

      await jsonpathField().fill('');
      await jsonpathField().pressSequentially('$.data[?@.size > 100].name', { delay: 15 });
      await result.getByText('1 value selected · read as RFC 9535').waitFor();
      await result.getByRole('cell', { name: '"foo.txt"', exact: true }).waitFor();
      await result.getByRole('cell', { name: "$['data'][7]['name']", exact: true }).waitFor();

      await jsonpathField().fill('$.data[?@.size > 100000].name');
      await result.getByText('No match', { exact: true }).waitFor();

      // A bad expression: the error, its position marked, and the same error beside the field.
      await jsonpathField().fill('$.data[0].name.toUpperCase()');
      await result.getByText('Invalid JSONPath', { exact: true }).waitFor();
      assert.equal(await result.locator('.marked mark').textContent(), '(');
      assert.match((await result.locator('.marked').textContent()) ?? '', /at position 26/);
      assert.match((await page.locator('#field-jsonpath-error').textContent()) ?? '', /invalid JSONPath at position 26/);
      assert.equal(await jsonpathField().getAttribute('aria-invalid'), 'true');

      // The jsonpath2 dialect, as the facility's older subscriptions are written.
      await jsonpathField().fill('$.data[*][?(@.destinationTable = "Transactions.project")].value');
      await result.getByText('1 value selected · read as jsonpath2 (Pacifica)').waitFor();
      await result.getByRole('cell', { name: '"1236é"', exact: true }).waitFor();

      await jsonpathField().fill('$.data[?@.mimetype == "text/plain"]');
      await result.getByText('3 values selected · read as RFC 9535').waitFor();

      // Its help names every kind of target the service takes (console/src/destination-kinds.ts).
      const targetHelp = (await page.locator('#field-target-help').textContent()) ?? '';
      for (const scheme of TARGET_SCHEMES) assert.match(targetHelp, new RegExp(`\\b${scheme}\\b`), scheme);

      // An address the service refuses: its message beside Target URL, which takes focus.
      await page.getByLabel('Target URL').fill('ftp://127.0.0.1/hook');
      await page.getByRole('button', { name: 'Create subscription' }).click();
      const targetError = page.locator('#field-target-error');
      await targetError.waitFor();
      assert.match((await targetError.textContent()) ?? '', /http, https, amqp, mqtt, nats or redis URL, not ftp/);
      assert.equal(await page.evaluate('document.activeElement.id'), 'field-target');
      assert.equal(await page.getByLabel('Target URL').getAttribute('aria-invalid'), 'true');
      await look(page, 'subscription-form');

      await page.getByLabel('Target URL').fill(`${stub.url}/hook`);
      await page.getByLabel('Sent to the target as').selectOption('header');
      await page.getByLabel('Scheme').fill('Bearer');
      await page.getByLabel('Credentials').fill('s3cret-token');
      await page.getByRole('button', { name: 'Add an extension' }).click();
      await page.getByLabel('Name of extension 1').fill('lab');
      await page.getByLabel('Value of extension 1').fill('emsl');
      await page.getByLabel('Rate limit (deliveries per second)').fill('20');
      await page.getByRole('button', { name: 'Create subscription' }).click();

      await page.getByRole('heading', { name, level: 1 }).waitFor();
      await page.getByText(`Subscription “${name}” created.`).waitFor();
      uuid = decodeURIComponent(new URL(page.url()).hash.replace('#/subscriptions/', ''));
      const stored = await api<Record<string, unknown>>('GET', `/eventmatch/${uuid}`);
      assert.equal(stored.jsonpath, '$.data[?@.mimetype == "text/plain"]');
      assert.equal(stored.target_url, `${stub.url}/hook`);
      assert.deepEqual(stored.auth, { type: 'header', header: { type: 'Bearer', credentials: 's3cret-token' } });
      assert.deepEqual(stored.extensions, { lab: 'emsl' });
      assert.equal(stored.rate_limit, 20);
      assert.equal(stored.notices, false, 'the Notices box left unticked');
      await page.locator('#fact-notices').getByText('Not sent here').waitFor();

      await page.getByRole('link', { name: 'Subscriptions', exact: true }).first().click();
      const row = page.getByRole('row', { name: new RegExp(name.replace(/[()]/g, '\\$&')) });
      await row.getByRole('cell', { name: `${stub.url}/hook` }).waitFor();
      await row.getByText('Active').waitFor();
      await look(page, 'subscriptions');
    });

    it('shows a delivery and its attempts as the event arrives at /receive', async () => {
      await page.getByRole('link', { name }).click();
      await page.getByText('No deliveries yet').waitFor();
      await receive(FACILITY_EVENT);
      const first = delivery('C234-1234-1234');
      await first.getByText('Delivered', { exact: true }).waitFor();
      await first.getByRole('cell', { name: 'HTTP 204' }).waitFor();
      await first.getByRole('cell', { name: 'Delivery', exact: true }).waitFor();
      await eventually(() => stub.requests.some((request) => request.url === '/hook'), 'the target gets the event');
      assert.equal(stub.requests.at(-1)!.headers.authorization, 'Bearer s3cret-token');
      await look(page, 'subscription');
    });

    it('tries the JSONPath on a delivery’s event in the tester, the values following what is typed', async () => {
      await delivery('C234-1234-1234').getByRole('link', { name: 'Try the JSONPath on this event' }).click();
      await page.getByRole('heading', { name: 'JSONPath tester', level: 1 }).waitFor();
      await page.getByText('Loaded the delivery’s event.').waitFor();
      const result = page.locator('.tester-result');
      await result.getByText('3 values selected · read as RFC 9535').waitFor();
      assert.equal(await jsonpathField().inputValue(), '$.data[?@.mimetype == "text/plain"]', 'the subscription’s expression');
      assert.match(
        await page.getByLabel('Event: one CloudEvent, as JSON').inputValue(),
        /\n {2}"cloudEventsVersion": "0\.1",\n/,
        'laid out over lines',
      );

      await jsonpathField().fill('');
      await jsonpathField().pressSequentially('$.data[?@.destinationTable == "Files"].name', { delay: 15 });
      await result.getByText('3 values selected · read as RFC 9535').waitFor();
      await result.getByRole('cell', { name: '"bar.txt"', exact: true }).waitFor();
      await look(page, 'tester');

      await page.getByRole('link', { name: `Back to ${name}` }).click();
      await page.getByRole('heading', { name, level: 1 }).waitFor();
    });

    it('shows a failed delivery, and sends it again once the target is fixed and the subscription enabled', async () => {
      // The target moves: the subscription is pointed where the target refuses.
      await page.getByRole('link', { name: 'Edit', exact: true }).click();
      await page.getByRole('heading', { name: `Edit “${name}”`, level: 1 }).waitFor();
      await page.getByLabel('Target URL').fill(`${stub.url}/broken`);
      await page.getByRole('button', { name: 'Save changes' }).click();
      await page.getByText(`Subscription “${name}” saved.`).waitFor();

      await receive(facilityEventTextWithId('C234-1234-1235'));
      const failed = delivery('C234-1234-1235');
      await failed.getByText('Failed', { exact: true }).waitFor();
      await failed.getByRole('cell', { name: 'HTTP 400' }).waitFor();
      // The failure disabled the subscription: the view says so without being reloaded.
      await page.getByText('A delivery failed for good, so delivery disabled this subscription.').waitFor();
      await page.getByText('target answered 400 Bad Request: missing field: project').first().waitFor();
      await look(page, 'subscription-failed');

      // Fixed: the target URL back where the target takes events.
      await page.getByRole('link', { name: 'change the target URL' }).click();
      await page.getByLabel('Target URL').fill(`${stub.url}/hook`);
      await page.getByRole('button', { name: 'Save changes' }).click();
      await page.getByText(`Subscription “${name}” saved.`).waitFor();

      // Disabled, the subscription offers to enable it with the retry.
      const again = delivery('C234-1234-1235');
      assert.equal(await again.getByRole('button', { name: 'Retry event C234-1234-1235', exact: true }).count(), 0);
      const hooked = stub.requests.filter((request) => request.url === '/hook').length;
      await again.getByRole('button', { name: 'Enable and retry event C234-1234-1235' }).click();
      await again.getByText('Event C234-1234-1235 is queued again').waitFor();
      await again.getByText('Delivered', { exact: true }).waitFor();
      await again.getByRole('cell', { name: 'HTTP 204' }).waitFor();
      assert.equal(await again.getByRole('cell', { name: 'HTTP 400' }).count(), 1, 'the failed attempt stays in its history');
      await eventually(() => stub.requests.filter((request) => request.url === '/hook').length === hooked + 1, 'the target gets it again');
      await page.locator('.view-head').getByText('Active', { exact: true }).waitFor();
      assert.equal(await page.getByText('A delivery failed for good').count(), 0);
      await again.getByRole('button', { name: 'Retry event C234-1234-1235', exact: true }).waitFor();
    });

    it('reveals, copies and rotates the signing secret', async () => {
      const secret = page.locator('#secret-value');
      assert.doesNotMatch((await secret.textContent()) ?? '', /whsec_/, 'hidden until revealed');
      const { secret: current } = await api<{ secret: string }>('GET', `/eventmatch/${uuid}/secret`);

      await page.getByRole('button', { name: 'Reveal' }).click();
      await secret.getByText(current).waitFor();
      await page.getByRole('button', { name: 'Hide' }).click();
      await eventually(async () => !((await secret.textContent()) ?? '').includes('whsec_'), 'hidden again');

      await page.getByRole('button', { name: 'Copy' }).click();
      await page.getByText('The secret is copied to the clipboard.').waitFor();
      assert.equal(await page.evaluate('navigator.clipboard.readText()'), current);

      await page.getByRole('button', { name: 'Rotate…' }).click();
      const dialog = page.getByRole('dialog', { name: 'Rotate the signing secret?' });
      await dialog.waitFor();
      await dialog.getByRole('button', { name: 'Rotate' }).click();
      await page.getByText('The secret is rotated').waitFor();
      const { secret: rotated } = await api<{ secret: string }>('GET', `/eventmatch/${uuid}/secret`);
      assert.notEqual(rotated, current);
      await secret.getByText(rotated).waitFor();
    });

    it('disables and enables the subscription, the list showing each state', async () => {
      await page.getByRole('button', { name: 'Disable', exact: true }).click();
      await page.getByText('Disabled: no events are delivered until it is enabled.').waitFor();
      assert.notEqual((await api<{ disabled: string | null }>('GET', `/eventmatch/${uuid}`)).disabled, null);
      await page.getByRole('link', { name: 'Subscriptions', exact: true }).first().click();
      await page.getByRole('row', { name: /Disabled/ }).waitFor();

      await page.getByRole('link', { name }).click();
      await page.getByRole('button', { name: 'Enable', exact: true }).click();
      await page.getByText('Enabled: new events are delivered again.').waitFor();
      assert.equal((await api<{ disabled: string | null }>('GET', `/eventmatch/${uuid}`)).disabled, null);
    });

    it('deletes the subscription only once the deletion is confirmed', async () => {
      await page.getByRole('button', { name: 'Delete…' }).click();
      const dialog = page.getByRole('dialog', { name: `Delete “${name}”?` });
      await dialog.waitFor();
      await look(page, 'delete-dialog');
      await page.keyboard.press('Escape');
      await dialog.waitFor({ state: 'hidden' });
      await api('GET', `/eventmatch/${uuid}`);

      await page.getByRole('button', { name: 'Delete…' }).click();
      await dialog.getByRole('button', { name: 'Delete subscription' }).click();
      await page.getByText(`Subscription “${name}” deleted.`).waitFor();
      await page.getByText('You have no subscriptions yet.').waitFor();
      const response = await fetch(`${server.url}/eventmatch/${uuid}`, { headers: { 'http-remote-user': USER } });
      assert.equal(response.status, 404);
    });

    it('makes and deletes a subscription with the keyboard alone', async () => {
      await page.goto(`${server.url}/console/#/`);
      await page.getByText('You have no subscriptions yet.').waitFor();
      await tabTo(page, `element.textContent === 'New subscription'`);
      await page.keyboard.press('Enter');
      await page.getByRole('heading', { name: 'New subscription', level: 1 }).waitFor();
      await tabTo(page, `element.id === 'field-name'`);
      await page.keyboard.type('Keyboard only');
      await page.keyboard.press('Tab');
      await page.keyboard.type('$.data[?@.name == "foo.txt"]');
      await tabTo(page, `element.id === 'field-target'`);
      await page.keyboard.type(`${stub.url}/hook`);
      await tabTo(page, `element.id === 'field-notices'`);
      await page.keyboard.press('Space');
      // What was typed is what the fields hold, before the form is sent.
      assert.deepEqual(
        [
          await page.locator('#field-name').inputValue(),
          await jsonpathField().inputValue(),
          await page.locator('#field-target').inputValue(),
          await page.getByLabel(NOTICES).isChecked(),
        ],
        ['Keyboard only', '$.data[?@.name == "foo.txt"]', `${stub.url}/hook`, true],
      );
      await tabTo(page, `element.textContent === 'Create subscription'`);
      await page.keyboard.press('Enter');
      await page
        .getByRole('heading', { name: 'Keyboard only', level: 1 })
        .waitFor()
        .catch(async (error: unknown) => {
          // Say what the page shows instead, for whoever reads the failure.
          await keepFailure(page, 'keyboard-create');
          throw new Error(`${String(error)}\nthe page shows: ${await page.locator('main').innerText()}`);
        });
      const made = decodeURIComponent(new URL(page.url()).hash.replace('#/subscriptions/', ''));
      assert.equal((await api<Record<string, unknown>>('GET', `/eventmatch/${made}`)).notices, true, 'ticked with the space bar');

      await tabTo(page, `element.textContent === 'Delete…'`);
      await page.keyboard.press('Enter');
      const dialog = page.getByRole('dialog', { name: 'Delete “Keyboard only”?' });
      await dialog.waitFor();
      assert.equal(await page.evaluate('document.activeElement.textContent'), 'Cancel', 'the dialog opens on the safe choice');
      await page.keyboard.press('Tab');
      assert.equal(await page.evaluate('document.activeElement.textContent'), 'Delete subscription');
      await page.keyboard.press('Enter');
      await page.getByText('Subscription “Keyboard only” deleted.').waitFor();
    });

    it('says a subscription was disabled by a failure that came while its view was opening', async () => {
      const broken = await api<{ uuid: string }>(
        'POST',
        '/eventmatch',
        JSON.stringify({
          name: `Broken (${backend.name})`,
          jsonpath: '$.data[?@.mimetype == "text/plain"]',
          target_url: `${stub.url}/broken`,
        }),
      );
      // The view reads the subscription, enabled, while its deliveries are held back until the
      // failure has disabled it: the first list it then shows is already the failure.
      let holding = true;
      const held: Array<() => Promise<void>> = [];
      await page.route(`**/eventmatch/${broken.uuid}/deliveries?*`, (route) =>
        holding ? void held.push(() => route.continue()) : route.continue(),
      );
      try {
        await page.goto(`${server.url}/console/#/subscriptions/${broken.uuid}`);
        await page.getByRole('heading', { name: `Broken (${backend.name})`, level: 1 }).waitFor();
        await eventually(() => held.length > 0, 'the view asks for its deliveries');
        await receive(facilityEventTextWithId('C234-1234-1240'));
        await eventually(
          async () => (await api<{ disabled: string | null }>('GET', `/eventmatch/${broken.uuid}`)).disabled !== null,
          'the failure disables the subscription',
        );
        holding = false;
        for (const release of held) await release();
        await delivery('C234-1234-1240').getByText('Failed', { exact: true }).waitFor();
        await page.getByText('A delivery failed for good, so delivery disabled this subscription.').waitFor();
      } finally {
        await page.unroute(`**/eventmatch/${broken.uuid}/deliveries?*`);
        await api('DELETE', `/eventmatch/${broken.uuid}`);
      }
    });

    describe('a pull subscription', () => {
      const pullName = `Pulled text files (${backend.name})`;
      let pullUuid = '';
      const eventsUrl = () => `${server.url}/eventmatch/${pullUuid}/events`;

      it('is made through the form: choosing pull hides the target, credentials and rate limit, and sends none of them', async () => {
        await page.goto(`${server.url}/console/#/new`);
        await page.getByRole('heading', { name: 'New subscription', level: 1 }).waitFor();
        await page.getByLabel('Name', { exact: true }).fill(pullName);
        await jsonpathField().fill('$.data[?@.mimetype == "text/plain"]');
        const push = page.getByRole('radio', { name: 'Push to a URL' });
        const pull = page.getByRole('radio', { name: 'Pull', exact: true });
        assert.equal(await push.isChecked(), true, 'push is the default');
        // Filled in while push was chosen: none of it may be sent once pull is.
        await page.getByLabel('Target URL').fill(`${stub.url}/hook`);
        await page.getByLabel('Sent to the target as').selectOption('basic');
        await page.getByLabel('Rate limit (deliveries per second)').fill('5');
        await page.getByLabel(NOTICES).check();

        // With the keyboard: the arrow key moves the choice, as in any radio group.
        await push.focus();
        await page.keyboard.press('ArrowDown');
        assert.equal(await pull.isChecked(), true);
        for (const label of ['Target URL', 'Sent to the target as', 'Rate limit (deliveries per second)'])
          assert.equal(await page.getByLabel(label).count(), 0, `${label} is not offered for pull`);
        await look(page, 'subscription-form-pull');

        // An answer naming body.delivery lands on the choice (the request is altered on its way,
        // the service answers it as it is).
        await page.route(`${server.url}/eventmatch`, (route) =>
          route.request().method() === 'POST'
            ? route.continue({ postData: route.request().postData()!.replace('"delivery":"pull"', '"delivery":"poll"') })
            : route.continue(),
        );
        try {
          await page.getByRole('button', { name: 'Create subscription' }).click();
          const deliveryError = page.locator('#field-delivery-error');
          await deliveryError.waitFor();
          assert.match((await deliveryError.textContent()) ?? '', /allowed values/);
          assert.equal(await pull.getAttribute('aria-invalid'), 'true');
          assert.equal(await page.evaluate('document.activeElement.id'), 'field-delivery-pull');
        } finally {
          await page.unroute(`${server.url}/eventmatch`);
        }

        await page.getByRole('button', { name: 'Create subscription' }).click();
        await page.getByRole('heading', { name: pullName, level: 1 }).waitFor();
        pullUuid = decodeURIComponent(new URL(page.url()).hash.replace('#/subscriptions/', ''));
        const stored = await api<Record<string, unknown>>('GET', `/eventmatch/${pullUuid}`);
        assert.equal(stored.delivery, 'pull');
        assert.equal(stored.target_url, null);
        assert.deepEqual(stored.auth, {});
        assert.equal(stored.rate_limit, null);
        assert.equal(stored.notices, true, 'the Notices box ticked: pull takes notices as push does');
        await page.locator('#fact-notices').getByText('Sent here too').waitFor();
      });

      it('shows its events URL and the curl commands to read it, and no target or signing secret', async () => {
        const facts = page.locator('dl.facts');
        await facts.getByText('Pull: you read its events from the service').waitFor();
        assert.equal(await facts.getByText('Target URL').count(), 0);
        assert.equal(await page.getByRole('heading', { name: 'Signing secret' }).count(), 0);

        const section = page.getByRole('region', { name: 'Reading its events' });
        assert.equal(await section.locator('#events-url').textContent(), eventsUrl(), 'absolute, from the page’s origin');
        const loop = (await section.locator('#pull-loop').textContent()) ?? '';
        assert.ok(loop.includes(`curl -sf "${eventsUrl()}?after=$after&wait=30"`), loop);
        assert.match(loop, /after=\$\(echo "\$page" \| jq -r \.next\)/);
        assert.equal(await section.locator('#pull-stream').textContent(), `curl -N -H 'Accept: text/event-stream' "${eventsUrl()}/stream"`);
        await section.getByText('send them through the front proxy').waitFor();

        await section.getByRole('button', { name: 'Copy the events URL' }).click();
        await section.getByText('The events URL is copied to the clipboard.').waitFor();
        assert.equal(await page.evaluate('navigator.clipboard.readText()'), eventsUrl());
        await section.getByRole('button', { name: 'Copy the reading loop' }).click();
        await section.getByText('The reading loop is copied to the clipboard.').waitFor();
        assert.equal(await page.evaluate('navigator.clipboard.readText()'), loop);
      });

      it('shows a delivery pending until the event is read through the API, then delivered with an attempt of stage pull', async () => {
        await page.getByText('No deliveries yet').waitFor();
        await receive(facilityEventTextWithId('C234-1234-1250'));
        const pulled = delivery('C234-1234-1250');
        await pulled.getByText('Pending: not read yet', { exact: true }).waitFor();

        // A reader, as the page's loop reads: the first request returns the event, the next one
        // (after its cursor) acknowledges it.
        const read = async (after?: string) =>
          api<{ events: Array<{ cursor: string; event: unknown }>; next: string }>(
            'GET',
            `/eventmatch/${pullUuid}/events${after === undefined ? '' : `?after=${encodeURIComponent(after)}`}`,
          );
        const first = await read();
        // The facility's event is CloudEvents 0.1: its id is `eventID`.
        assert.equal(first.events.length, 1);
        assert.match(JSON.stringify(first.events[0]!.event), /"C234-1234-1250"/);
        await read(first.next);

        await pulled.getByText('Delivered', { exact: true }).waitFor();
        await pulled.getByRole('cell', { name: 'Pull', exact: true }).waitFor();
        await pulled.getByRole('cell', { name: 'Read and acknowledged' }).waitFor();
        await look(page, 'subscription-pull');
      });

      it('is listed as pull, and edited without offering to change its delivery or target', async () => {
        await page.getByRole('link', { name: 'Subscriptions', exact: true }).first().click();
        const row = page.getByRole('row', { name: new RegExp(pullName.replace(/[()]/g, '\\$&')) });
        await row.getByRole('cell', { name: 'Pull', exact: true }).waitFor();
        await look(page, 'subscriptions-pull');

        await row.getByRole('link', { name: pullName }).click();
        await page.getByRole('link', { name: 'Edit', exact: true }).click();
        await page.getByRole('heading', { name: `Edit “${pullName}”`, level: 1 }).waitFor();
        await page.getByText('A subscription’s delivery is fixed once created').waitFor();
        assert.equal(await page.getByRole('radio').count(), 0, 'no choice of delivery');
        for (const label of ['Target URL', 'Sent to the target as', 'Rate limit (deliveries per second)'])
          assert.equal(await page.getByLabel(label).count(), 0, `${label} is not offered for pull`);
        await look(page, 'subscription-form-pull-edit');

        assert.equal(await page.getByLabel(NOTICES).isChecked(), true, 'the form shows the stored notices');
        await page.getByLabel('Name', { exact: true }).fill(`${pullName}, renamed`);
        await page.getByRole('button', { name: 'Save changes' }).click();
        await page.getByText(`Subscription “${pullName}, renamed” saved.`).waitFor();
        const stored = await api<Record<string, unknown>>('GET', `/eventmatch/${pullUuid}`);
        assert.equal(stored.name, `${pullName}, renamed`);
        assert.equal(stored.delivery, 'pull');
        assert.equal(stored.target_url, null);
        assert.equal(stored.notices, true);
      });
    });

    it('ran without a script error or anything refused by its Content-Security-Policy', () => {
      assert.deepEqual(watch.problems, []);
    });
  });
}

for (const backend of testBackends()) {
  describeOn({ skip: backend.skip || CHROMIUM_SKIP }, `the web console at the subscription limit, in Chromium (${backend.name})`, () => {
    const LIMIT = 2;
    let context: BrowserContext;
    let page: Page;
    let watch: { problems: string[] };
    const look = backend.name === 'sqlite' ? lookAt : async () => undefined;

    // Registered ahead of serverOn's: the browser closes before the server stops.
    after(() => context?.close());
    const server = serverOn(backend, { NOTIFICATIONS_USER_SUBSCRIPTIONS: String(LIMIT) });
    before(async () => {
      context = await browser().newContext({ viewport: WIDE, extraHTTPHeaders: { 'http-remote-user': USER } });
      context.setDefaultTimeout(30_000);
      page = await context.newPage();
      watch = watchPage(page);
    });

    const request = (method: string, path: string, body?: object) =>
      fetch(`${server.url}${path}`, {
        method,
        headers: { 'http-remote-user': USER, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    const held = async () => (await (await request('GET', '/eventmatch')).json()) as Array<{ uuid: string; name: string }>;

    it('says why a create is refused at the limit, keeps what was entered, and creates once a place is free', async () => {
      for (let n = 1; n <= LIMIT; n++) {
        const made = await request('POST', '/eventmatch', {
          name: `Held ${n}`,
          jsonpath: '$.data',
          target_url: 'https://example.org/hook',
        });
        assert.equal(made.status, 200, await made.text());
      }
      await page.goto(`${server.url}/console/#/new`);
      await page.getByRole('heading', { name: 'New subscription', level: 1 }).waitFor();
      await page.getByLabel('Name', { exact: true }).fill('One too many');
      await page.getByLabel('JSONPath', { exact: true }).fill('$.data[?@.mimetype == "text/plain"]');
      await page.getByLabel('Target URL').fill('https://example.org/hook');
      await page.getByRole('button', { name: 'Create subscription' }).click();

      const alert = page.getByRole('alert').filter({ hasText: 'NOTIFICATIONS_USER_SUBSCRIPTIONS' });
      await alert.waitFor();
      assert.match((await alert.textContent()) ?? '', new RegExp(`already holds ${LIMIT} live subscriptions`));
      // Seen where it is, not only read out: the form is taller than the window.
      const box = await alert.boundingBox();
      assert.ok(box !== null && box.y >= 0 && box.y + box.height <= WIDE.height, `the message is in view: ${JSON.stringify(box)}`);
      assert.equal(await page.getByLabel('Name', { exact: true }).inputValue(), 'One too many');
      assert.equal((await held()).length, LIMIT, 'nothing was stored');
      await look(page, 'subscription-limit');

      const [first] = await held();
      assert.equal((await request('DELETE', `/eventmatch/${first!.uuid}`)).status, 200);
      await page.getByRole('button', { name: 'Create subscription' }).click();
      await page.getByRole('heading', { name: 'One too many', level: 1 }).waitFor();
      assert.deepEqual((await held()).map((s) => s.name).sort(), ['Held 2', 'One too many']);
    });

    it('ran without a script error or anything refused by its Content-Security-Policy', () => {
      assert.deepEqual(watch.problems, []);
    });
  });
}
