/**
 * Stops the process at once, with one line saying why, on a Node.js older than the service runs
 * on: better-sqlite3 crashes the process on Node.js 20 (a segmentation fault, no message), and
 * undici needs 22.19. Imported first by each entry point, so that it runs before anything else
 * loads. `engines` in package.json names the same lines.
 */

/** Whether a Node.js version (`process.versions.node`) is one the service runs on: 22.19 or later. */
export function isSupportedNode(version: string): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return major > 22 || (major === 22 && minor >= 19);
}

if (!isSupportedNode(process.versions.node)) {
  process.stderr.write(
    `svc-notifications needs Node.js 22.19 or later (24 recommended; 22, 24 and 26 are supported); this is ${process.version}\n`,
  );
  process.exit(1);
}
