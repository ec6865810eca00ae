/**
 * The console's form with the auth types for delivery inside institutions, in Chromium against
 * the built server on each database: a subscription made with OAuth 2.0 client credentials and
 * one with a client certificate, each record checked; the secret and the key shown masked in the
 * form when editing, and kept when the form is saved as it is.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { describeOn, testBackends } from '../support/database.js';
import { CHROMIUM_SKIP, chromiumForFile, lookAt, watchPage, WIDE } from '../support/browser.js';
import { serverOn } from '../support/server-on.js';
import { makeTestPki, type TestPki } from '../support/test-pki.js';

const USER = 'alice';
const MASK = '********';

const browser = chromiumForFile();

for (const backend of testBackends()) {
  describeOn({ skip: backend.skip || CHROMIUM_SKIP }, `the console's OAuth 2.0 and client certificate auth (${backend.name})`, () => {
    let context: BrowserContext;
    let page: Page;
    let watch: { problems: string[] };
    const pki: TestPki = makeTestPki();
    after(() => context?.close());
    const server = serverOn(backend, {}, { open: true });
    before(async () => {
      context = await browser().newContext({ viewport: WIDE, extraHTTPHeaders: { 'http-remote-user': USER } });
      context.setDefaultTimeout(30_000);
      page = await context.newPage();
      watch = watchPage(page);
    });
    const look = backend.name === 'sqlite' ? lookAt : async () => undefined;

    const record = async (uuid: string) => {
      const response = await fetch(`${server.url}/eventmatch/${uuid}`, { headers: { 'http-remote-user': USER } });
      assert.equal(response.status, 200);
      return (await response.json()) as { auth: Record<string, unknown> };
    };
    // No NOTIFICATIONS_SECRET_KEY here: the row holds the credentials as JSON, to see what was kept.
    const storedAuth = async (uuid: string) =>
      JSON.parse(
        (await server.db.db.selectFrom('subscriptions').select('auth').where('uuid', '=', uuid).executeTakeFirstOrThrow()).auth,
      ) as unknown;

    const newSubscription = async (name: string, targetUrl: string) => {
      await page.goto(`${server.url}/console/#/new`);
      await page.getByRole('heading', { name: 'New subscription', level: 1 }).waitFor();
      await page.getByLabel('Name', { exact: true }).fill(name);
      await page.getByLabel('JSONPath', { exact: true }).fill('$.data');
      await page.getByLabel('Target URL').fill(targetUrl);
    };
    const created = async (name: string) => {
      await page.getByRole('button', { name: 'Create subscription' }).click();
      await page.getByRole('heading', { name, level: 1 }).waitFor();
      return decodeURIComponent(new URL(page.url()).hash.replace('#/subscriptions/', ''));
    };
    const editAndSave = async (name: string) => {
      await page.getByRole('link', { name: 'Edit', exact: true }).click();
      await page.getByRole('heading', { name: `Edit “${name}”`, level: 1 }).waitFor();
    };

    it('creates a subscription with OAuth 2.0 client credentials; editing shows the secret masked, and saving keeps it', async () => {
      const name = `Token client (${backend.name})`;
      await newSubscription(name, 'https://127.0.0.1:8443/hook');
      await page.getByLabel('Sent to the target as').selectOption('oauth2');
      await page.getByLabel('Token URL').fill('https://127.0.0.1:8444/oauth/token');
      await page.getByLabel('Client ID').fill('pipeline');
      await page.getByLabel('Client secret').fill('console-secret');
      await page.getByLabel('Scope (optional)').fill('events:write');
      await look(page, 'subscription-form-oauth2');
      const uuid = await created(name);
      const oauth2 = { token_url: 'https://127.0.0.1:8444/oauth/token', client_id: 'pipeline', scope: 'events:write' };
      assert.deepEqual((await record(uuid)).auth, { type: 'oauth2', oauth2: { ...oauth2, client_secret: MASK } });
      assert.deepEqual(await storedAuth(uuid), { type: 'oauth2', oauth2: { ...oauth2, client_secret: 'console-secret' } });
      await page.getByText(/OAuth 2\.0 client credentials, client pipeline/).waitFor();

      await editAndSave(name);
      assert.equal(await page.getByLabel('Client secret').inputValue(), MASK);
      await page.getByLabel('Audience (optional)').fill('https://pipeline.example');
      await page.getByRole('button', { name: 'Save changes' }).click();
      await page.getByText(`Subscription “${name}” saved.`).waitFor();
      assert.deepEqual(await storedAuth(uuid), {
        type: 'oauth2',
        oauth2: { ...oauth2, client_secret: 'console-secret', audience: 'https://pipeline.example' },
      });
      assert.deepEqual(watch.problems, []);
    });

    it("offers the auth types the Target URL's kind takes: a broker HTTP Basic only, a webhook all", async () => {
      const offered = () => page.locator('#field-auth option').evaluateAll((options) => options.map((o) => o.getAttribute('value')));
      await newSubscription(`Offered (${backend.name})`, 'amqp://127.0.0.1/?exchange=e&routing_key=k');
      assert.deepEqual(await offered(), ['none', 'basic']);
      await page.getByLabel('Target URL').fill('https://127.0.0.1:8443/hook');
      assert.deepEqual(await offered(), ['none', 'basic', 'header', 'oauth2', 'mtls']);
      assert.deepEqual(watch.problems, []);
    });

    it('creates a subscription with a client certificate; a key that does not match is shown beside Authentication', async () => {
      const name = `Certificate client (${backend.name})`;
      await newSubscription(name, 'https://127.0.0.1:8443/hook');
      await page.getByLabel('Sent to the target as').selectOption('mtls');
      await page.getByLabel('Certificate (PEM)').fill(pki.clientCert);
      await page.getByLabel('Private key (PEM, unencrypted)').fill(pki.otherKey);
      await page.getByLabel('Trusted roots (PEM, optional)').fill(pki.caCert);
      await page.getByRole('button', { name: 'Create subscription' }).click();
      const error = page.locator('#field-auth-error');
      await error.waitFor();
      assert.match((await error.textContent()) ?? '', /does not match the certificate of body\.auth\.mtls\.cert/);
      await look(page, 'subscription-form-mtls');

      await page.getByLabel('Private key (PEM, unencrypted)').fill(pki.clientKey);
      const uuid = await created(name);
      assert.deepEqual((await record(uuid)).auth, { type: 'mtls', mtls: { cert: pki.clientCert, key: MASK, ca: pki.caCert } });
      assert.deepEqual(await storedAuth(uuid), { type: 'mtls', mtls: { cert: pki.clientCert, key: pki.clientKey, ca: pki.caCert } });
      await page.getByText('Client certificate (mutual TLS)').waitFor();

      await editAndSave(name);
      assert.equal(await page.getByLabel('Private key (PEM, unencrypted)').inputValue(), MASK);
      await page.getByRole('button', { name: 'Save changes' }).click();
      await page.getByText(`Subscription “${name}” saved.`).waitFor();
      assert.deepEqual(await storedAuth(uuid), { type: 'mtls', mtls: { cert: pki.clientCert, key: pki.clientKey, ca: pki.caCert } });
      assert.deepEqual(watch.problems, []);
    });
  });
}
