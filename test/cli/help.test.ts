/**
 * The real built svc-notifications-cmd: every subcommand answers --help without touching the
 * database, the top-level --help and --version keep working, and bad arguments of each
 * subcommand exit 2 with its usage line.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runCli } from '../support/processes.js';

const COMMANDS = ['dbchk', 'dbsync', 'eventget', 'eventpurge', 'eventretry', 'backup', 'reseal'];
// Nothing listens on port 1: were the database opened, the command would exit 1.
const UNREACHABLE = ['--database-url', 'postgres://postgres@127.0.0.1:1/nowhere'];
const usageOf = (command: string) => new RegExp(`^usage: svc-notifications-cmd \\[--database-url URL\\] \\[--config FILE\\] ${command}\\b`);

describe('svc-notifications-cmd --help', () => {
  for (const command of COMMANDS) {
    it(`${command} --help and -h print its usage and exit 0, without opening the database`, async () => {
      for (const args of [
        [command, '--help'],
        [command, '-h'],
        [...UNREACHABLE, command, '--help'],
        ['help', command],
      ]) {
        const result = await runCli(args);
        assert.equal(result.code, 0, `${args.join(' ')}: ${result.stderr}`);
        assert.equal(result.stderr, '');
        assert.match(result.stdout, usageOf(command), args.join(' '));
        assert.ok(result.stdout.trim().split('\n').length >= 3, 'a description follows the usage line');
      }
    });
  }

  it('--help wins over arguments that would be refused', async () => {
    const result = await runCli(['eventget', '--limit', 'many', '--help']);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, usageOf('eventget'));
  });

  it('the top-level --help, -h and help list every subcommand; --version prints the version', async () => {
    for (const args of [['--help'], ['-h'], ['help'], [...UNREACHABLE, '--help']]) {
      const help = await runCli(args);
      assert.equal(help.code, 0, `${args.join(' ')}: ${help.stderr}`);
      assert.match(help.stdout, /^usage: svc-notifications-cmd /);
      for (const command of COMMANDS) assert.match(help.stdout, new RegExp(`\\n  ${command}\\b`), `${args.join(' ')} lists ${command}`);
    }
    const version = await runCli(['--version']);
    assert.equal(version.code, 0);
    assert.match(version.stdout.trim(), /^\d+\.\d+\.\d+$/);
  });

  it('help for a command that does not exist: exit 2 and the usage line', async () => {
    const result = await runCli(['help', 'frobnicate']);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /unknown command frobnicate\nusage: svc-notifications-cmd /);
  });
});

describe('svc-notifications-cmd bad arguments', () => {
  const cases: Array<[string[], RegExp]> = [
    [['dbchk', '--bogus'], /unknown argument --bogus/],
    [['dbsync', 'extra'], /unknown argument extra/],
    [['eventget', '--limit', '-1'], /unknown option -1|--limit/],
    [['eventget', '--limit', 'ten'], /--limit must be a non-negative integer/],
    [['eventget', '--start-date', 'yesterday'], /--start-date must be a date/],
    [['eventget', '--start-date', '2024-02-02 00:00:00', '--end-date', '2024-02-01 00:00:00'], /start date .* is after the end date/],
    [['eventget', 'not-a-uuid'], /not an event uuid: not-a-uuid/],
    [['eventpurge', '--older-than-date', '2024-13-01 00:00:00'], /--older-than-date must be a date/],
    [['eventpurge', '--limit'], /--limit needs a value/],
    [['eventretry'], /no event uuid given/],
    [['eventretry', '--force', '6f1c1d0e-0d3a-4d7e-9f3e-2a1b0c9d8e7f'], /unknown option --force/],
    [['backup'], /backup: no file given/],
    [['backup', 'a.sqlite3', 'b.sqlite3'], /backup: one file only/],
    [['backup', 'a.sqlite3', '--overwrite'], /backup: unknown option --overwrite/],
    [['reseal', '--all'], /reseal: unknown argument --all/],
  ];
  for (const [args, why] of cases) {
    it(`${args.join(' ')}: exit 2, why, and the usage line of ${args[0]}`, async () => {
      const result = await runCli([...UNREACHABLE, ...args]);
      assert.equal(result.code, 2, result.stderr);
      assert.equal(result.stdout, '');
      const lines = result.stderr.trim().split('\n');
      assert.equal(lines.length, 2, result.stderr);
      assert.match(lines[0]!, why);
      assert.match(lines[1]!, new RegExp(`^usage: svc-notifications-cmd ${args[0]}\\b`));
    });
  }
});
