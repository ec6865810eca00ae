import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runCli } from '../support/processes.js';

const UUID = '2b0c1a1e-8d3b-4c52-9f0e-0a7d7b2f3c11';
// Arguments are checked before the database is opened: a database that does not exist proves it.
const NOWHERE = ['--database-url', 'postgres://postgres@127.0.0.1:1/nowhere'];

describe('svc-notifications-cmd event-log commands: bad arguments', () => {
  const cases: Array<[string[], RegExp]> = [
    [['eventget', '--bogus'], /unknown option --bogus/],
    [['eventget', '--limit', '1.5'], /--limit must be a non-negative integer/],
    [['eventget', '--limit', '-1'], /--limit must be a non-negative integer/],
    [['eventget', '--limit=ten'], /--limit must be a non-negative integer/],
    [['eventget', '--limit'], /--limit needs a value/],
    [['eventget', '--limit', '1', '--limit', '2'], /--limit is given twice/],
    [['eventget', '--start-date', '2024-02-30 00:00:00'], /--start-date must be a date 'YYYY-MM-DD HH:MM:SS'/],
    [['eventget', '--end-date', 'yesterday'], /--end-date must be a date/],
    [['eventget', '--start-date', '2024-01-02 00:00:00', '--end-date', '2024-01-01 23:59:59'], /start date .* is after the end date/],
    [['eventget', 'not-a-uuid'], /not an event uuid: not-a-uuid/],
    [['eventget', UUID, '--limit', '3'], /--limit cannot be combined with event uuids/],
    [['eventget', '--json=yes'], /unknown option --json=yes/],
    [['eventpurge', '--older-than-date', '2024-01-01'], /--older-than-date must be a date/],
    [['eventpurge', '--limit', '-5'], /--limit must be a non-negative integer/],
    [['eventpurge', '--start-date', '2024-01-01 00:00:00'], /unknown option --start-date/],
    [['eventpurge', UUID, '--older-than-date', '2024-01-01 00:00:00'], /--older-than-date cannot be combined with event uuids/],
    [['eventpurge', '12345'], /not an event uuid/],
    [['eventretry'], /no event uuid given/],
    [['eventretry', '--force', UUID], /unknown option --force/],
    [['eventretry', `${UUID}x`], /not an event uuid/],
  ];
  for (const [args, message] of cases) {
    it(`${args.join(' ') || '(none)'}: exit 2, the reason and a usage line`, async () => {
      const result = await runCli([...NOWHERE, ...args]);
      assert.equal(result.code, 2, result.stderr);
      assert.match(result.stderr, message);
      assert.match(result.stderr, new RegExp(`usage: svc-notifications-cmd ${args[0]} `));
      assert.equal(result.stdout, '');
    });
  }

  it('a database that cannot be reached: exit 1 and one line', async () => {
    for (const args of [['eventget'], ['eventpurge'], ['eventretry', UUID]]) {
      const result = await runCli([...NOWHERE, ...args]);
      assert.equal(result.code, 1, result.stderr);
      assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr);
      assert.match(result.stderr, /cannot use the database/);
    }
  });

  it('--help names the three commands and the --json shape', async () => {
    const help = await runCli(['--help']);
    assert.equal(help.code, 0);
    for (const name of ['eventget', 'eventpurge', 'eventretry']) assert.match(help.stdout, new RegExp(`^  ${name} `, 'm'));
    assert.match(help.stdout, /"matches":\[\{"uuid","created","subscription","user","state","policy","target","attempts"/);
  });
});
