/**
 * The project as the deployment tests see it: its root, its package.json, a clean clone of what
 * is committed, and whether a tool a suite needs is here (the reason it is skipped when not).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The project root; tests run from dist/test/support/. */
export const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

export const PACKAGE = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  version: string;
  devDependencies: Record<string, string>;
};

const LOCK = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { dev?: boolean }>;
};

/**
 * The names of the development dependencies that no production dependency needs as well (the
 * lock marks them `dev`), none of which an installation may hold. (`@types/node` is not one:
 * mqtt's published types depend on it.)
 */
export const DEV_DEPENDENCIES = Object.keys(PACKAGE.devDependencies).filter((name) => LOCK.packages[`node_modules/${name}`]?.dev === true);

/** `reason` when `command args` cannot be run here or fails; false when it succeeds. */
export function skipUnless(command: string, args: string[], reason: string): string | false {
  return spawnSync(command, args, { timeout: 30_000 }).status === 0 ? false : reason;
}

/** Why a suite that clones the project cannot run here; false when it can. */
export const CLONE_SKIP = skipUnless('git', ['-C', ROOT, 'rev-parse', 'HEAD'], 'git is missing, or this is not a git checkout');

/** A fresh clone of HEAD in `dir` (which must not exist): what is committed, nothing else. */
export function cloneHead(dir: string): void {
  const clone = spawnSync('git', ['clone', '--quiet', '--depth', '1', `file://${ROOT}`, dir], { encoding: 'utf8' });
  if (clone.status !== 0) throw new Error(`git clone failed: ${clone.stderr}`);
}
