/**
 * The docs' and the console's lists of destination kinds are what src/destinations/kinds.ts
 * makes: `npm run docs` writes them, and these fail when a committed one is not current.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { consoleKindsModule, fillKinds, markedKinds, REGION_NAMES } from '../../src/destinations/kinds-doc.js';
import { BROKER_KINDS } from '../../src/destinations/kinds.js';
import { targetUrlProblem } from '../../src/destinations/target-url.js';

// Tests run from dist/test/docs/, three levels below the project root.
const ROOT = new URL('../../..', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, ROOT), 'utf8');

/** Each page, and the parts of it made from the registry. */
const PAGES: Readonly<Record<string, readonly string[]>> = {
  'docs/api.md': ['target-url'],
  'docs/errors.md': ['target-url-invalid'],
  'docs/delivery.md': ['brokers'],
};
const STALE = 'is not current: run `npm run docs` and commit the result';

describe('the destination kinds in the docs and the console', () => {
  for (const [page, names] of Object.entries(PAGES)) {
    it(`${page}: its marked lists are what \`npm run docs\` makes`, () => {
      const committed = read(page);
      assert.deepEqual(markedKinds(committed), names);
      assert.ok(committed === fillKinds(committed), `${page} ${STALE}`);
    });
  }

  it('every part made is on a page', () => {
    assert.deepEqual(Object.values(PAGES).flat().sort(), [...REGION_NAMES].sort());
  });

  it('console/src/destination-kinds.ts is what `npm run docs` makes', () => {
    assert.ok(read('console/src/destination-kinds.ts') === consoleKindsModule(), `console/src/destination-kinds.ts ${STALE}`);
  });

  it("docs/api.md: the example of TARGET_URL_INVALID is the service's message", () => {
    const message = `body.target_url: ${targetUrlProblem('ftp://example.org/')}`;
    assert.ok(read('docs/api.md').includes(`"code":"TARGET_URL_INVALID","message":"${message}"`), message);
  });

  it("docs/api.md: each broker's URL is explained", () => {
    const page = read('docs/api.md');
    for (const kind of BROKER_KINDS) assert.ok(page.includes(`\n- \`${kind.form}\`, `), kind.id);
  });

  it('fills a marked part, and refuses a name it does not know', () => {
    assert.match(
      fillKinds('a <!-- kinds:brokers -->old<!-- /kinds:brokers --> b'),
      /^a <!-- kinds:brokers -->\[.*\]\(#mqtt\).*<!-- \/kinds:brokers --> b$/,
    );
    assert.throws(() => fillKinds('<!-- kinds:colours -->x<!-- /kinds:colours -->'), /names no part/);
  });
});
