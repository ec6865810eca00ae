import { readFileSync } from 'node:fs';

/** name and version from package.json (two levels up from dist/src/). */
export function packageInfo(): { name: string; version: string } {
  const raw = readFileSync(new URL('../../package.json', import.meta.url), 'utf8');
  const { name, version } = JSON.parse(raw) as { name: string; version: string };
  return { name, version };
}
