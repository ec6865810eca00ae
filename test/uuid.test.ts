import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { canonicalUuid, timeOrderedUuid } from '../src/uuid.js';

describe('timeOrderedUuid', () => {
  it('is a version 7, RFC 9562 variant uuid carrying the time in milliseconds', () => {
    const uuid = timeOrderedUuid(0x0123456789ab);
    assert.match(uuid, /^01234567-89ab-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.equal(canonicalUuid(uuid), uuid);
  });

  it('sorts later uuids after earlier ones, and never repeats', () => {
    const uuids = Array.from({ length: 1_000 }, (_, i) => timeOrderedUuid(1_700_000_000_000 + i));
    assert.deepEqual([...uuids].sort(), uuids);
    assert.equal(new Set(Array.from({ length: 10_000 }, () => timeOrderedUuid())).size, 10_000);
  });

  it('carries the time it is given, whatever time the one before carried', () => {
    const times = [0x0123456789ab, 0x0123456789ab, 0x0000000000ff, 0x0123456789ab, 0xffffffffffff];
    assert.deepEqual(
      times.map((time) => timeOrderedUuid(time).slice(0, 15)),
      ['01234567-89ab-7', '01234567-89ab-7', '00000000-00ff-7', '01234567-89ab-7', 'ffffffff-ffff-7'],
    );
  });
});
