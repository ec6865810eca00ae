/**
 * deploy/systemd/svc-notifications.service: `systemd-analyze verify` accepts it, with its two
 * programs where an install puts them; it has the hardening the deployment contract names; and
 * `systemd-analyze security` rates its exposure low. Skipped, with why, without systemd-analyze.
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { describeOn } from '../support/database.js';
import { CLI_BIN, runCommand, SERVER_BIN } from '../support/processes.js';
import { skipUnless } from '../support/project.js';

const UNIT = fileURLToPath(new URL('../../../deploy/systemd/svc-notifications.service', import.meta.url));
const SYSTEMD_ANALYZE_SKIP = skipUnless('systemd-analyze', ['--version'], 'systemd-analyze is missing: apt-get install systemd');
/** The most `systemd-analyze security` may rate the unit: 0 is sealed, 10 is unprotected; 2 is "OK". */
const MOST_EXPOSURE = 2;

/** The unit's settings, each name with every value given to it. */
function settings(text: string): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const line of text.split('\n')) {
    const setting = /^([A-Za-z]+)=(.*)$/.exec(line);
    if (setting) found.set(setting[1]!, [...(found.get(setting[1]!) ?? []), setting[2]!]);
  }
  return found;
}

describeOn({ skip: SYSTEMD_ANALYZE_SKIP }, 'the systemd unit', () => {
  const text = readFileSync(UNIT, 'utf8');
  let dir = '';
  let unit = '';

  before(() => {
    // systemd resolves a bare program name in /usr/local/bin, /usr/bin, … where `npm install -g`
    // puts it; here the same programs stand in a directory of the test's, named in a copy.
    dir = mkdtempSync(join(tmpdir(), 'notifications-unit-'));
    for (const [name, program] of [
      ['svc-notifications', SERVER_BIN],
      ['svc-notifications-cmd', CLI_BIN],
    ] as const) {
      writeFileSync(join(dir, name), `#!/bin/sh\nexec node ${program} "$@"\n`);
      chmodSync(join(dir, name), 0o755);
    }
    const copy = text.replace(/^(ExecStart(?:Pre)?)=(svc-notifications(?:-cmd)?)\b/gm, `$1=${dir}/$2`);
    assert.equal(copy.split(dir).length - 1, 2, 'both programs are named by their bare names');
    unit = join(dir, 'svc-notifications.service');
    writeFileSync(unit, copy);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('is accepted by systemd-analyze verify', async () => {
    const verified = await runCommand('systemd-analyze', ['verify', unit]);
    assert.equal(verified.code, 0, verified.stderr);
    assert.equal(verified.stderr.trim(), '', 'no warning');
  });

  it('runs as a user of its own, in a read-only system, with its state directory, settings file and restarts', () => {
    const unitSettings = settings(text);
    const one = (name: string) => unitSettings.get(name)?.join(' ');
    assert.equal(one('DynamicUser'), 'yes');
    assert.equal(one('NoNewPrivileges'), 'yes');
    assert.equal(one('ProtectSystem'), 'strict');
    assert.equal(one('StateDirectory'), 'svc-notifications');
    assert.equal(one('Environment')?.includes('NOTIFICATIONS_DATABASE_URL=sqlite:/var/lib/svc-notifications/'), true);
    assert.match(one('EnvironmentFile') ?? '', /\/etc\/svc-notifications\//);
    assert.equal(one('Restart'), 'on-failure');
    assert.equal(one('CapabilityBoundingSet'), '');
  });

  it(`is rated at most ${MOST_EXPOSURE} by systemd-analyze security`, async (t) => {
    const rated = await runCommand('systemd-analyze', ['security', '--offline=yes', unit]);
    const exposure = /Overall exposure level for \S+: ([\d.]+)/.exec(rated.stdout + rated.stderr)?.[1];
    assert.ok(exposure !== undefined, rated.stdout + rated.stderr);
    t.diagnostic(`exposure ${exposure}`);
    assert.ok(Number(exposure) <= MOST_EXPOSURE, rated.stdout);
  });
});
