/**
 * The notifications an instance expects for its own creates: each taken once, cancelled when the
 * create stored nothing, and forgotten after a minute when it never came.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EXPECTED_FOR_MS, ExpectedNotifications } from '../../src/db/expected-notifications.js';

describe('expected notifications', () => {
  it('takes an expected notification once: a later one of the same subscription is read', () => {
    const expected = new ExpectedNotifications(() => 0);
    expected.expect('a');
    assert.equal(expected.take('b'), false, 'not expected: another instance wrote it');
    assert.equal(expected.take('a'), true);
    assert.equal(expected.take('a'), false, 'a later write of it, by any instance');
    assert.equal(expected.size, 0);
  });

  it('forgets a cancelled create', () => {
    const expected = new ExpectedNotifications(() => 0);
    expected.expect('a');
    expected.cancel('a');
    assert.equal(expected.take('a'), false);
  });

  it('forgets an expectation older than a minute once another create is expected', () => {
    let now = 0;
    const expected = new ExpectedNotifications(() => now);
    expected.expect('old');
    now = EXPECTED_FOR_MS / 2;
    expected.expect('younger');
    now = EXPECTED_FOR_MS;
    expected.expect('new');
    assert.equal(expected.size, 2);
    assert.equal(expected.take('old'), false);
    assert.equal(expected.take('younger'), true);
    assert.equal(expected.take('new'), true);
  });
});
