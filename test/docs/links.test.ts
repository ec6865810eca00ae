import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { describe, it } from 'node:test';

// Tests run from dist/test/docs/, three levels below the project root.
const ROOT = new URL('../../..', import.meta.url);

/** What a user of the project does not have: files beside it, or documents kept elsewhere. */
const OUTSIDE = ['../shared', 'PRODUCT.md', 'DESIGN.md', 'service-spec'];

function docs(): string[] {
  const pages = readdirSync(new URL('docs/', ROOT))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`);
  return ['README.md', ...pages];
}

function read(path: string): string {
  return readFileSync(new URL(path, ROOT), 'utf8');
}

/** Text outside fenced code blocks and code spans, where a link could be. */
function prose(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
}

/** Relative link targets: `[text](target)`, without web addresses. */
function relativeLinks(markdown: string): string[] {
  return [...prose(markdown).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)]
    .map((match) => match[1] ?? '')
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target));
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .replace(/`/g, '')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const found = new Set<string>();
  for (const match of markdown.replace(/^```[\s\S]*?^```/gm, '').matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = slug(match[1] ?? '');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    found.add(count === 0 ? base : `${base}-${count}`);
  }
  return found;
}

/** `docs/../README.md` → `README.md`, relative to the project root. */
function resolve(from: string, target: string): string {
  const parts = from.split('/').slice(0, -1);
  for (const part of target.split('/')) {
    if (part === '..') parts.pop();
    else if (part !== '.' && part !== '') parts.push(part);
  }
  return parts.join('/');
}

describe('documentation', () => {
  it('refers to nothing outside the project', () => {
    for (const path of [...docs(), 'CHANGELOG.md']) {
      const text = read(path);
      for (const outside of OUTSIDE) assert.ok(!text.includes(outside), `${path} mentions ${outside}`);
    }
  });

  it('links only to files that exist, and to headings they have', () => {
    const broken: string[] = [];
    for (const path of [...docs(), 'CHANGELOG.md']) {
      for (const link of relativeLinks(read(path))) {
        const [file = '', anchor] = link.split('#');
        const target = file === '' ? path : resolve(path, decodeURIComponent(file));
        const url = new URL(target, ROOT);
        if (!existsSync(url)) {
          broken.push(`${path}: ${link} (no such file)`);
        } else if (anchor !== undefined && target.endsWith('.md') && statSync(url).isFile() && !anchors(read(target)).has(anchor)) {
          broken.push(`${path}: ${link} (no such heading)`);
        }
      }
    }
    assert.deepEqual(broken, []);
  });

  it('links from the README to every page of docs/', () => {
    const linked = new Set(relativeLinks(read('README.md')).map((link) => link.split('#')[0]));
    for (const page of docs().filter((path) => path.startsWith('docs/'))) {
      assert.ok(linked.has(page), `README.md does not link to ${page}`);
    }
  });

  it('finds links and headings as GitHub does', () => {
    assert.deepEqual(relativeLinks('[a](docs/api.md#x) [b](https://example.org) `[c](no.md)` [d](#y "title")'), ['docs/api.md#x', '#y']);
    assert.deepEqual(
      [...anchors('# API\n## When the database fails\n## Try it\n## Try it\n### `dbchk`, again: 1/2')],
      ['api', 'when-the-database-fails', 'try-it', 'try-it-1', 'dbchk-again-12'],
    );
    assert.equal(resolve('docs/api.md', '../README.md'), 'README.md');
  });
});
