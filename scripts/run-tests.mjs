#!/usr/bin/env node
// Runs every compiled test file (dist/test/**/*.test.js) with node's test runner, each with the
// leak guard preloaded (to run single files the same way: node --test --import ./dist/test/support/leak-guard.js FILE).
// Arguments are passed on, e.g. `npm test -- --test-name-pattern=index`.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
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
const files = testFiles('dist/test').sort();
// Every file's process preloads the leak guard: a file that leaves a timer, server, socket or
// child process running after its tests fails, naming what it left (test/support/leak-guard.ts).
const guard = pathToFileURL(resolve('dist/test/support/leak-guard.js')).href;
const result = spawnSync(process.execPath, ['--test', '--import', guard, ...process.argv.slice(2), ...files], { stdio: 'inherit' });
process.exit(result.status ?? 1);
