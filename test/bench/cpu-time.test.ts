import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { describe, it } from 'node:test';
import pg from 'pg';
import { measureCpu } from '../../bench/cpu-time.js';

const BUSY_MS = 400;

/**
 * A process that, once told, keeps its main thread or a worker thread busy until the process
 * has used BUSY_MS more of CPU (not of wall time: on a loaded machine it gets less than a core).
 */
async function busyProcess(where: 'main' | 'worker'): Promise<{ pid: number; run(): Promise<void>; stop(): void }> {
  const spin = `const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
    const end = cpu() + ${BUSY_MS}; while (cpu() < end);`;
  const code =
    where === 'main'
      ? `process.stdin.once('data', () => { ${spin} console.log('done'); }); console.log('ready');`
      : `const { Worker } = require('node:worker_threads');
         process.stdin.once('data', () => new Worker(${JSON.stringify(spin)}, { eval: true }).once('exit', () => console.log('done')));
         console.log('ready');`;
  const child = spawn(process.execPath, ['-e', code], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  assert.equal((await lines.next()).value, 'ready');
  return {
    pid: child.pid!,
    run: async () => {
      child.stdin!.write('go\n');
      assert.equal((await lines.next()).value, 'done');
    },
    stop: () => child.kill(),
  };
}

describe('measureCpu (the benchmark CPU table)', () => {
  it("counts a main thread's CPU as the main thread's and the process's", async () => {
    const child = await busyProcess('main');
    try {
      const { perEvent: used } = await measureCpu(child.pid, child.run, () => 1);
      assert.ok(used.main >= BUSY_MS * 0.8, `main thread ${used.main} ms`);
      // The kernel adjusts a process's total and each thread's times apart (in 10 ms ticks): they
      // may differ by a tick or two either way.
      assert.ok(used.process >= used.main - 20, `process ${used.process} ms, main ${used.main} ms`);
      assert.ok(used.machine >= used.main * 0.8, `machine ${used.machine} ms`);
    } finally {
      child.stop();
    }
  });

  it("counts a worker thread's CPU as the process's, not the main thread's", async () => {
    const child = await busyProcess('worker');
    try {
      const { perEvent: used } = await measureCpu(child.pid, child.run, () => 2);
      assert.ok(used.process >= (BUSY_MS * 0.8) / 2, `process ${used.process} ms per event`);
      assert.ok(used.main < used.process / 2, `main thread ${used.main} ms of ${used.process} ms per event`);
    } finally {
      child.stop();
    }
  });

  const url = process.env.NOTIFICATIONS_TEST_DATABASE_URL;
  it('counts the CPU of PostgreSQL’s processes', { skip: url ? false : 'SQLite only: no NOTIFICATIONS_TEST_DATABASE_URL' }, async () => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const { perEvent: used } = await measureCpu(
        process.pid,
        () => client.query('select count(*) from generate_series(1, 5000000)'),
        () => 1,
      );
      assert.ok(used.postgres >= 100, `PostgreSQL ${used.postgres} ms`);
    } finally {
      await client.end();
    }
  });
});
