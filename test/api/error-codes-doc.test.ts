/**
 * docs/errors.md and the catalogue (src/errors.ts) list the same codes with the same statuses,
 * as fastify's docs test does for its errors: a code added to one and not the other, or given
 * another status in one of them, fails here.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { ERRORS } from '../../src/errors.js';

/** The project root; tests run from dist/test/api/, three levels below it. */
const ROOT = new URL('../../..', import.meta.url);
const PAGE = 'docs/errors.md';

/** The rows of the page's table: `| \`CODE\` | 400 | when | what to do |`. */
function documentedCodes(markdown: string): Array<{ code: string; status: number }> {
  return [...markdown.matchAll(/^\|\s*`([A-Z0-9_]+)`\s*\|\s*(\d{3})\s*\|/gm)].map((row) => ({ code: row[1]!, status: Number(row[2]) }));
}

/** What the page and the catalogue disagree on, in words; empty when they agree. */
function disagreements(catalogue: Readonly<Record<string, { status: number }>>, markdown: string): string[] {
  const rows = documentedCodes(markdown);
  const found: string[] = [];
  const seen = new Set<string>();
  for (const { code, status } of rows) {
    if (seen.has(code)) found.push(`${code} is on the page more than once`);
    seen.add(code);
    const defined = catalogue[code];
    if (defined === undefined) found.push(`${code} is on the page but not in the catalogue`);
    else if (defined.status !== status) found.push(`${code} is a ${defined.status} in the catalogue but a ${status} on the page`);
  }
  for (const code of Object.keys(catalogue)) if (!seen.has(code)) found.push(`${code} is in the catalogue but not on the page`);
  return found;
}

describe(`the error codes of ${PAGE}`, () => {
  const page = readFileSync(new URL(PAGE, ROOT), 'utf8');

  it('are those of the catalogue, each once, with its status', () => {
    assert.deepEqual(disagreements(ERRORS, page), []);
    assert.equal(documentedCodes(page).length, Object.keys(ERRORS).length);
  });

  it('say when, and what the client should do, for each code', () => {
    for (const line of page.split('\n').filter((l) => /^\|\s*`[A-Z0-9_]+`/.test(l))) {
      const cells = line
        .split('|')
        .slice(1, -1)
        .map((cell) => cell.trim());
      assert.equal(cells.length, 4, line);
      assert.ok(cells[2]!.length > 10 && cells[3]!.length > 10, line);
    }
  });

  it('would be caught missing, extra, repeated or with another status', () => {
    const catalogue = { A_CODE: { status: 400 }, B_CODE: { status: 404 }, C_CODE: { status: 500 } };
    const table = (...rows: string[]) => ['| Code | Status | When | What |', '| --- | --- | --- | --- |', ...rows].join('\n');
    const row = (code: string, status: number) => `| \`${code}\` | ${status} | when | do |`;
    assert.deepEqual(disagreements(catalogue, table(row('A_CODE', 400), row('B_CODE', 404), row('C_CODE', 500))), []);
    assert.deepEqual(
      disagreements(catalogue, table(row('A_CODE', 400), row('B_CODE', 410), row('C_CODE', 500), row('D_CODE', 400), row('A_CODE', 400))),
      [
        'B_CODE is a 404 in the catalogue but a 410 on the page',
        'D_CODE is on the page but not in the catalogue',
        'A_CODE is on the page more than once',
      ],
    );
    assert.deepEqual(disagreements(catalogue, table(row('A_CODE', 400), row('C_CODE', 500))), [
      'B_CODE is in the catalogue but not on the page',
    ]);
  });
});
