/**
 * A real small filesystem for tests of a full disk: a tmpfs of a few megabytes mounted in a
 * fresh temporary directory (which needs root, and a kernel that lets this process mount), and
 * a filler file beside whatever the test keeps there, to take the space and give it back.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmdirSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface SmallFilesystem {
  readonly dir: string;
  /** Bytes free for files. */
  available(): number;
  /** Writes a filler file (`name`: another beside the first) that leaves about `bytes` free. */
  fillLeaving(bytes: number, name?: string): void;
  /** Deletes the filler files: their space is free again. */
  free(): void;
  unmount(): void;
}

const FILLER = 'filler';

export function mountSmallFilesystem(sizeBytes: number): SmallFilesystem {
  const dir = mkdtempSync(join(tmpdir(), 'notifications-small-fs-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeBytes}`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch (error) {
    rmdirSync(dir);
    throw error;
  }
  const available = () => {
    const stats = statfsSync(dir);
    return stats.bavail * stats.bsize;
  };
  return {
    dir,
    available,
    fillLeaving: (bytes, name = 'first') => {
      const path = join(dir, `${FILLER}-${name}.bin`);
      try {
        writeFileSync(path, Buffer.alloc(Math.max(0, available() - bytes)));
      } catch (error) {
        // Filling to the last byte: what did not fit is what was asked for.
        if ((error as { code?: string }).code !== 'ENOSPC') throw error;
      }
    },
    free: () => {
      for (const name of readdirSync(dir)) if (name.startsWith(FILLER)) rmSync(join(dir, name), { force: true });
    },
    unmount: () => {
      execFileSync('umount', [dir], { stdio: 'pipe' });
      rmdirSync(dir);
    },
  };
}

/** Why a small filesystem cannot be mounted here (not root, or mounting not permitted); false when it can. */
function smallFilesystemSkip(): string | false {
  if (process.platform !== 'linux') return `a tmpfs needs Linux, not ${process.platform}`;
  if (process.getuid?.() !== 0) return 'mounting a tmpfs needs root; run as root to test a full disk';
  try {
    mountSmallFilesystem(64 * 1024).unmount();
    return false;
  } catch (error) {
    const stderr = (error as { stderr?: Buffer }).stderr?.toString().trim();
    return `cannot mount a tmpfs here (${stderr || (error instanceof Error ? error.message : String(error))})`;
  }
}

/** For `describeOn`: a small real filesystem this test process can mount and fill. */
export const SMALL_FILESYSTEM = { skip: smallFilesystemSkip() };
