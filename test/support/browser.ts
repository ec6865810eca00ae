/**
 * A real browser for the console's tests: Debian's Chromium driven by playwright-core (nothing
 * is downloaded), with the switches that keep it from reaching out on a closed network; axe-core
 * run inside the page; screenshots where a person can look at them; and a watch for what the
 * page's own Content-Security-Policy refuses, which must be nothing.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { after, before } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type Browser, chromium, type Page } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

/** Where the screenshots go (git-ignored); tests run from dist/test/support/. */
export const SCREENSHOTS = fileURLToPath(new URL('../../../test-output/console', import.meta.url));

export const WIDE = { width: 1280, height: 900 };
export const PHONE = { width: 390, height: 844 };

/** Why the Chromium suites cannot run here; false when they can. */
export const CHROMIUM_SKIP: string | false = existsSync(CHROMIUM)
  ? false
  : `${CHROMIUM} is missing: apt-get install chromium (.ci/run does)`;

export async function launchChromium(): Promise<Browser> {
  if (CHROMIUM_SKIP) throw new Error(CHROMIUM_SKIP);
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}

const BUILT_CONSOLE = fileURLToPath(new URL('../../console/main.js', import.meta.url));

/**
 * For a test file of the console: Chromium launched before its tests (the console built first)
 * and closed after them; none when CHROMIUM_SKIP. The browser is there once the tests run.
 */
export function chromiumForFile(): () => Browser {
  let browser: Browser | undefined;
  before(async () => {
    if (CHROMIUM_SKIP) return;
    if (!existsSync(BUILT_CONSOLE)) throw new Error(`${BUILT_CONSOLE} is missing: run \`npm run build\`, which compiles the console too`);
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
  });
  return () => {
    if (!browser) throw new Error('chromiumForFile: Chromium is launched in a before hook; use it in a test or a later hook');
    return browser;
  };
}

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface Violation {
  id: string;
  impact: string | null;
  help: string;
  nodes: string[];
}

/**
 * axe-core's serious and critical violations on the page as it is now (injected through the
 * debugging protocol, which the page's CSP does not govern: the page itself stays as served).
 */
export async function seriousViolations(page: Page): Promise<Violation[]> {
  if (!(await page.evaluate('typeof window.axe !== "undefined"'))) await page.evaluate(AXE);
  const violations = (await page.evaluate(
    `axe.run(document, { resultTypes: ['violations'] }).then((result) => result.violations.map((v) => ({
      id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.target.join(' ')),
    })))`,
  )) as Violation[];
  return violations.filter((violation) => violation.impact === 'serious' || violation.impact === 'critical');
}

/** Two animation frames: the layout after a change of size or content has been drawn. */
export const settled = (page: Page) => page.evaluate('new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))');

/**
 * The view as it is, checked and kept: no serious or critical axe violation at 1280 px or at
 * 390 px, and a full-page screenshot at each (`<name>-1280.png`, `<name>-390.png`).
 */
export async function lookAt(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  const before = page.viewportSize() ?? WIDE;
  for (const size of [WIDE, PHONE]) {
    await page.setViewportSize(size);
    await settled(page);
    const violations = await seriousViolations(page);
    assert.deepEqual(violations, [], `${name} at ${size.width} px: ${JSON.stringify(violations, null, 2)}`);
    await page.screenshot({ path: `${SCREENSHOTS}${name}-${size.width}.png`, fullPage: true });
  }
  await page.setViewportSize(before);
  await settled(page);
}

/** A screenshot of the page as a test found it when it failed: `failed-<name>.png` beside the others. */
export async function keepFailure(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: `${SCREENSHOTS}failed-${name}.png`, fullPage: true }).catch(() => undefined);
}

/** What the page reports against itself: script errors, and anything its CSP refused. */
export function watchPage(page: Page): { problems: string[] } {
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (/Content Security Policy|Refused to/i.test(message.text())) problems.push(`CSP: ${message.text()}`);
  });
  return { problems };
}

/** Presses Tab until `check` holds for the focused element (at most `presses` times); its description. */
export async function tabTo(page: Page, check: string, presses = 60): Promise<void> {
  for (let i = 0; i < presses; i++) {
    await page.keyboard.press('Tab');
    if (await page.evaluate(`(() => { const element = document.activeElement; return Boolean(${check}); })()`)) return;
  }
  throw new Error(`Tab never reached the element for which ${check}`);
}
