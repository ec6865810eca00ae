#!/usr/bin/env node
// Runs every compiled test file (dist/test/**/*.test.js) with node's test runner, each with the
// leak guard preloaded (to run single files the same way: node --test --import ./dist/test/support/leak-guard.js FILE).
// Arguments naming compiled test files or folders (dist/test/db) run those alone; the others are
// passed on to node's test runner, e.g. `npm test -- --test-name-pattern=index`.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

function testFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return testFiles(path);
    return entry.name.endsWith('.test.js') ? [path] : [];
  });
}

if (process.env.NOTIFICATIONS_TEST_DATABASE_URL) {
  console.log('# databases: SQLite and PostgreSQL (NOTIFICATIONS_TEST_DATABASE_URL)');
} else {
  console.log(
    '# databases: SQLite only; the PostgreSQL suites are reported as skipped (set NOTIFICATIONS_TEST_DATABASE_URL=postgres://… to run them)',
  );
}
const chosen = process.argv.slice(2).filter((arg) => !arg.startsWith('-') && existsSync(arg));
const passedOn = process.argv.slice(2).filter((arg) => !chosen.includes(arg));
const files = (chosen.length > 0 ? chosen : ['dist/test'])
  .flatMap((path) => (statSync(path).isDirectory() ? testFiles(path) : [path]))
  .sort();
// Every file's process preloads the leak guard: a file that leaves a timer, server, socket or
// child process running after its tests fails, naming what it left (test/support/leak-guard.ts).
const guard = pathToFileURL(resolve('dist/test/support/leak-guard.js')).href;
// A file per core: most files spend much of their time waiting for the processes, servers and
// databases they start, so node's default (a core less) left half of a 2-core machine idle and
// took CI twice as long. An argument given (--test-concurrency=1) overrides it.
const concurrency = `--test-concurrency=${availableParallelism()}`;
const child = spawn(process.execPath, ['--test', concurrency, '--import', guard, ...passedOn, ...files], {
  stdio: ['inherit', 'pipe', 'inherit'],
});
// The summary's count of skipped tests, as the TAP (`# skipped N`) or spec (`ℹ skipped N`) reporter prints it.
let tail = '';
child.stdout.on('data', (chunk) => {
  process.stdout.write(chunk);
  tail = (tail + chunk.toString()).slice(-4096);
});
child.on('exit', (code) => {
  const skipped = Number(/^(?:# |ℹ )skipped (\d+)$/m.exec(tail)?.[1] ?? 0);
  // CI (.ci/run) provides everything every suite needs: there, a skipped suite is a failure.
  if (code === 0 && skipped > 0 && process.env.NOTIFICATIONS_TEST_NO_SKIPS) {
    console.error(`${skipped} tests were skipped, and NOTIFICATIONS_TEST_NO_SKIPS is set: see why above`);
    process.exit(1);
  }
  process.exit(code ?? 1);
});
