import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { configurationDoc } from '../../src/config/configuration-doc.js';
import { SETTING_KEYS, SETTINGS } from '../../src/config/settings.js';

// Tests run from dist/test/config/, three levels below the project root.
const DOC = new URL('../../../docs/configuration.md', import.meta.url);

describe('docs/configuration.md', () => {
  it('is what `npm run docs` generates from the settings table', () => {
    const committed = readFileSync(DOC, 'utf8');
    assert.ok(committed === configurationDoc(), 'docs/configuration.md is not current: run `npm run docs` and commit the result');
  });

  it('has one table row per setting, with its flag and default', () => {
    const rows = configurationDoc()
      .split('\n')
      .filter((line) => line.startsWith('| `NOTIFICATIONS_'));
    assert.equal(rows.length, SETTING_KEYS.length);
    for (const key of SETTING_KEYS) {
      const setting = SETTINGS[key];
      const row = rows.find((line) => line.startsWith(`| \`${setting.env}\` |`));
      assert.ok(row, setting.env);
      if (setting.flag !== undefined) assert.ok(row.includes(`\`${setting.flag}\``), `${setting.env}: flag`);
      if (setting.default) assert.ok(row.includes(`\`${setting.default.split(',')[0]}\``), `${setting.env}: default`);
    }
  });

  it('keeps table cells whole: no pipe or raw angle bracket from a description', () => {
    const row = configurationDoc()
      .split('\n')
      .find((line) => line.startsWith('| `NOTIFICATIONS_DATABASE_URL` |'));
    assert.ok(row?.includes('sqlite:&lt;path&gt;'), row);
    assert.equal(row?.split(' | ').length, 4);
  });
});
