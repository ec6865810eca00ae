/**
 * The files of the web console, read once at start-up: its page and style sheet (`console/`),
 * its modules as `npm run build` compiles them (`dist/console/`), and Preact and htm from
 * node_modules, served as ES modules beside them. No bundler: the browser loads each module by
 * a relative path, so the page needs no import map (which would be an inline script).
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { extname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface Asset {
  readonly body: Buffer;
  readonly type: string;
  /** A strong validator of the body, quoted. */
  readonly etag: string;
}

/** Each asset by its path under /console/ ('' is the page itself). */
export type ConsoleAssets = ReadonlyMap<string, Asset>;

export interface AssetDirectories {
  /** The page, style sheet and icon. */
  pages: string;
  /** The compiled modules. */
  modules: string;
}

/** From dist/src/console/, where this module runs: the project's console/ and dist/console/. */
export const DEFAULT_DIRECTORIES: AssetDirectories = {
  pages: fileURLToPath(new URL('../../../console', import.meta.url)),
  modules: fileURLToPath(new URL('../../console', import.meta.url)),
};

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/** The files of console/ that are served; the rest (sources, tsconfig) is not. */
const PAGES: Record<string, string> = { '': 'index.html', 'console.css': 'console.css', 'icon.svg': 'icon.svg' };

/**
 * preact/hooks imports `preact` by its bare name, which a browser can resolve only through an
 * import map: it is pointed at the copy served beside it instead.
 */
const BARE_PREACT = /\bfrom\s*(["'])preact\1/g;

/** The vendored modules: where node resolves each, and what it is served as. */
const VENDOR: ReadonlyArray<{ path: string; specifier: string; rewrite?: (text: string) => string }> = [
  { path: 'vendor/preact.js', specifier: 'preact' },
  { path: 'vendor/hooks.js', specifier: 'preact/hooks', rewrite: pointHooksAtPreact },
  { path: 'vendor/htm.js', specifier: 'htm' },
];

/**
 * Every asset, read now. Throws when the compiled modules are missing (`npm run build` compiles
 * them), or a vendored module no longer has the shape served.
 */
export function loadConsoleAssets(directories: AssetDirectories = DEFAULT_DIRECTORIES): ConsoleAssets {
  const assets = new Map<string, Asset>();
  for (const [path, file] of Object.entries(PAGES)) assets.set(path, asset(file, readFileSync(join(directories.pages, file))));
  if (!existsSync(join(directories.modules, 'main.js'))) {
    throw new Error(`${join(directories.modules, 'main.js')} is missing: run \`npm run build\``);
  }
  for (const file of moduleFiles(directories.modules)) {
    const path = relative(directories.modules, file).split(sep).join('/');
    assets.set(path, asset(file, readFileSync(file)));
  }
  for (const { path, specifier, rewrite } of VENDOR) {
    const file = fileURLToPath(import.meta.resolve(specifier));
    const text = readFileSync(file, 'utf8');
    assets.set(path, asset(path, Buffer.from(rewrite ? rewrite(text) : text)));
  }
  return assets;
}

function pointHooksAtPreact(text: string): string {
  const rewritten = text.replace(BARE_PREACT, 'from$1./preact.js$1');
  if (rewritten === text) throw new Error('preact/hooks no longer imports "preact" as the console expects; see src/console/assets.ts');
  return rewritten;
}

/** The compiled modules (.js), without source maps or anything else the build may leave. */
function moduleFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return moduleFiles(path);
    return entry.name.endsWith('.js') ? [path] : [];
  });
}

function asset(name: string, body: Buffer): Asset {
  const type = TYPES[extname(name)];
  if (type === undefined) throw new Error(`no media type for ${name}`);
  return { body, type, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` };
}
