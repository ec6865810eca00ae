/**
 * Sending failed deliveries again from the console, in a real browser (Debian's Chromium through
 * playwright-core), against the built server as a process, a real target, a real policy service
 * and each database: a target that broke leaves one delivery failed and two cancelled by the
 * disable; once it is fixed, "Send failed deliveries again since…" enables the subscription,
 * says how many were queued, and all three go through the policy service to the target. The
 * disabled state is explained before and when the service refuses; a refused time is shown
 * beside the field. The views pass axe-core at 1280 and 390 px.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import type { DeliveryRecord } from '../../src/subscriptions/delivery-history.js';
import { CHROMIUM_SKIP, chromiumForFile, lookAt, watchPage, WIDE } from '../support/browser.js';
import { describeOn, testBackends } from '../support/database.js';
import { facilityEventTextWithId } from '../support/fixtures.js';
import { eventually, type HttpStub, reply, startStub } from '../support/http-stub.js';
import { serverOn } from '../support/server-on.js';

const USER = 'alice';
const IDS = ['R-1', 'R-2', 'R-3'];

const browser = chromiumForFile();

for (const backend of testBackends()) {
  describeOn({ skip: backend.skip || CHROMIUM_SKIP }, `sending failed deliveries again from the console (${backend.name})`, () => {
    let target: HttpStub;
    let policy: HttpStub;
    let context: BrowserContext;
    let page: Page;
    let watch: { problems: string[] };
    let uuid = '';
    const look = backend.name === 'sqlite' ? lookAt : async () => undefined;

    before(async () => {
      target = await startStub(reply(503, 'down for maintenance'));
      policy = await startStub(reply(200));
    });
    // Registered ahead of serverOn's: the browser closes before the server stops; after both, the stubs.
    after(() => context?.close());
    const server = serverOn(backend, () => ({
      NOTIFICATIONS_POLICY_URL: policy.url,
      // A delivery the target answers 503 waits an hour: it is still waiting when the failure comes.
      NOTIFICATIONS_RETRY_DELAYS: '1h',
    }));
    after(async () => {
      await target?.close();
      await policy?.close();
    });
    before(async () => {
      context = await browser().newContext({ viewport: WIDE, extraHTTPHeaders: { 'http-remote-user': USER } });
      context.setDefaultTimeout(30_000);
      page = await context.newPage();
      watch = watchPage(page);
    });

    const api = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
      const response = await fetch(`${server.url}${path}`, {
        method,
        headers: { 'http-remote-user': USER, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await response.text();
      assert.ok(response.ok, `${method} ${path}: ${response.status} ${text}`);
      return JSON.parse(text) as T;
    };
    const receive = async (id: string) => {
      const response = await fetch(`${server.url}/receive`, {
        method: 'POST',
        headers: { 'content-type': 'application/cloudevents+json; charset=utf-8' },
        body: facilityEventTextWithId(id),
      });
      assert.equal(response.status, 200, await response.text());
    };
    const deliveries = () => api<DeliveryRecord[]>('GET', `/eventmatch/${uuid}/deliveries`);
    const delivery = (id: string) => page.locator('li.delivery', { has: page.getByRole('heading', { name: `Event ${id}` }) });
    const sinceField = () => page.getByLabel('Send failed deliveries again since');
    const idOf = (body: string) => (JSON.parse(body) as { eventID: string }).eventID;

    it('explains, on a subscription a broken target disabled, that sending its failed deliveries again enables it first', async () => {
      ({ uuid } = await api<{ uuid: string }>('POST', '/eventmatch', {
        name: 'Recovered',
        jsonpath: '$.data[?@.mimetype == "text/plain"]',
        target_url: `${target.url}/hook`,
      }));
      // Two deliveries wait for their retry after a 503; the third is refused for good, which
      // disables the subscription and cancels the two.
      await receive(IDS[0]!);
      await receive(IDS[1]!);
      await eventually(
        async () => (await deliveries()).filter((d) => d.state === 'deliver' && d.attempts.length === 1).length === 2,
        'two deliveries wait for their retry',
      );
      target.answer(reply(400, 'missing field: project'));
      await receive(IDS[2]!);
      await eventually(async () => (await api<{ disabled: string | null }>('GET', `/eventmatch/${uuid}`)).disabled !== null, 'disabled');
      assert.deepEqual((await deliveries()).map((d) => d.state).sort(), ['cancelled', 'cancelled', 'failed']);

      await page.goto(`${server.url}/console/#/subscriptions/${uuid}`);
      await delivery(IDS[2]!).getByText('Failed', { exact: true }).waitFor();
      await delivery(IDS[0]!).getByText('Cancelled', { exact: true }).waitFor();
      const form = page.locator('form.recover');
      await form.getByText('The subscription is disabled, so its deliveries would only be cancelled').waitFor();
      await form.getByRole('button', { name: 'Enable and send again' }).waitFor();
      // A day back unless changed, in the reader's own time.
      const since = new Date(await sinceField().inputValue()).getTime();
      assert.ok(Math.abs(Date.now() - 24 * 3_600_000 - since) < 120_000, `since ${await sinceField().inputValue()}`);
      await look(page, 'subscription-recover-disabled');
    });

    it('enables the subscription, queues the three again, and they reach the target after a policy check', async () => {
      target.answer(reply(204));
      const asked = policy.requests.length;
      const sent = target.requests.length;
      await page.getByRole('button', { name: 'Enable and send again' }).click();
      await page.getByText('3 deliveries queued again: a policy check, then delivery.').waitFor();
      await page.locator('.view-head').getByText('Active', { exact: true }).waitFor();
      for (const id of IDS) await delivery(id).getByText('Delivered', { exact: true }).waitFor();

      await eventually(() => target.requests.length === sent + 3, 'the target gets the three');
      assert.deepEqual(
        target.requests
          .slice(sent)
          .map((r) => idOf(r.body))
          .sort(),
        IDS,
        'each once',
      );
      const checks = policy.requests.slice(asked);
      assert.deepEqual(
        checks.map((r) => r.url),
        IDS.map(() => `/events/${USER}`),
        'each asked about again, for its owner',
      );
      assert.deepEqual(checks.map((r) => idOf(r.body)).sort(), IDS);
      await page.getByRole('button', { name: 'Send again', exact: true }).waitFor();
      await look(page, 'subscription-recovered');
    });

    it('says when there is nothing to send again, and shows a time the service refuses beside the field', async () => {
      await page.getByRole('button', { name: 'Send again', exact: true }).click();
      await page.getByText('No failed or cancelled deliveries since then: nothing to send again.').waitFor();

      // The request is altered on its way; the service answers it as it is.
      const path = `${server.url}/eventmatch/${uuid}/deliveries/recover`;
      await page.route(path, (route) => route.continue({ postData: JSON.stringify({ since: 'last Tuesday' }) }));
      try {
        await page.getByRole('button', { name: 'Send again', exact: true }).click();
        await page.getByRole('alert').getByText('body.since: must be a UTC time YYYY-MM-DDTHH:MM:SS.ffffff').waitFor();
        assert.equal(await sinceField().getAttribute('aria-invalid'), 'true');
      } finally {
        await page.unroute(path);
      }
    });

    it('explains a refusal because the subscription was disabled meanwhile', async () => {
      // Disabled behind the page's back: nothing in its deliveries moves, so the page still shows it active.
      await api('PUT', `/eventmatch/${uuid}`, { disabled: true });
      await page.getByRole('button', { name: 'Send again', exact: true }).click();
      await page
        .getByRole('alert')
        .getByText('The subscription is disabled, so the deliveries would only be cancelled: enable it first, then send them again.')
        .waitFor();
      assert.equal(await sinceField().getAttribute('aria-invalid'), null);
    });

    it('ran without a script error or anything refused by its Content-Security-Policy', () => {
      assert.deepEqual(watch.problems, []);
    });
  });
}
