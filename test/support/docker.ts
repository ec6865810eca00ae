/**
 * The Docker engine for the deployment tests: whether one answers here (the suites that need it
 * are reported as skipped with the reason when none does), the docker command run to its end,
 * and the project's image built from a clean clone of the committed tree, as CI and a user get it.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Finished, runCommand } from './processes.js';
import { cloneHead } from './project.js';

/** The base image the Dockerfile names by default. */
export const BASE_IMAGE = 'node:24-bookworm-slim';

/** Why the tests that run containers cannot run here; false when they can. */
export const DOCKER_SKIP: string | false = dockerSkip();

function dockerSkip(): string | false {
  const info = spawnSync('docker', ['info', '--format', '{{.ServerVersion}}'], { encoding: 'utf8', timeout: 30_000 });
  if (info.error) return 'docker is not installed: apt-get install docker.io (.ci/run does)';
  if (info.status !== 0)
    return `no Docker engine answers: start dockerd --bridge=none --iptables=false (.ci/run does): ${info.stderr.trim()}`;
  const base = spawnSync('docker', ['image', 'inspect', BASE_IMAGE], { timeout: 30_000 });
  if (base.status === 0) return false;
  const pull = spawnSync('docker', ['pull', BASE_IMAGE], { timeout: 120_000 });
  if (pull.status === 0) return false;
  return `${BASE_IMAGE} is neither here nor pullable: build a stand-in with deploy/docker/build-node-base.sh (.ci/run does)`;
}

/** `docker …` to its end (rejects after `timeoutMs`); the legacy builder, which needs no buildx. */
export function docker(args: string[], timeoutMs = 120_000): Promise<Finished> {
  return runCommand('docker', args, { env: { ...process.env, DOCKER_BUILDKIT: '0' }, timeoutMs });
}

/** `docker …`, which must exit 0; its standard output, trimmed. */
export async function dockerOk(args: string[], timeoutMs?: number): Promise<string> {
  const result = await docker(args, timeoutMs);
  if (result.code !== 0) throw new Error(`docker ${args.join(' ')} exited ${result.code}:\n${result.stderr}${result.stdout}`);
  return result.stdout.trim();
}

/**
 * Builds the Dockerfile of a fresh clone of HEAD (what is committed, nothing else) as `tag`,
 * with the host's network as every build here does; resolves with the build's seconds.
 */
export async function buildImageFromClone(tag: string): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'notifications-image-'));
  try {
    cloneHead(join(dir, 'clone'));
    const started = performance.now();
    await dockerOk(['build', '--network', 'host', '--tag', tag, join(dir, 'clone')], 20 * 60_000);
    return (performance.now() - started) / 1000;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
