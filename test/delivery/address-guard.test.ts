import assert from 'node:assert/strict';
import type { LookupAddress } from 'node:dns';
import { describe, it } from 'node:test';
import { addressGuard, type AddressGuard, type ResolveAll } from '../../src/delivery/address-guard.js';

const DEFAULT_DENY = ['169.254.0.0/16', 'fe80::/10', '100.100.100.200/32', 'fd00:ec2::254/128'];

function lookup(guard: AddressGuard, hostname: string, all: boolean): Promise<{ error: NodeJS.ErrnoException | null; address: string | LookupAddress[]; family?: number }> {
  return new Promise((resolve) => guard.lookup(hostname, { all }, (error, address, family) => resolve({ error, address, family })));
}

describe('addressGuard.permits', () => {
  const guard = addressGuard({ allow: [], deny: DEFAULT_DENY });

  it('refuses denied blocks and permits the rest when nothing is allowed explicitly', () => {
    assert.equal(guard.permits('169.254.169.254', 4), false);
    assert.equal(guard.permits('100.100.100.200', 4), false);
    assert.equal(guard.permits('fe80::1', 6), false);
    assert.equal(guard.permits('fd00:ec2::254', 6), false);
    assert.equal(guard.permits('93.184.216.34', 4), true);
    assert.equal(guard.permits('2001:db8::1', 6), true);
    assert.equal(guard.permits('127.0.0.1', 4), true);
  });

  it('judges an IPv4-mapped IPv6 address as the IPv4 address, in any spelling', () => {
    for (const mapped of ['::ffff:169.254.169.254', '::FFFF:a9fe:a9fe', '0:0:0:0:0:ffff:169.254.169.254']) {
      assert.equal(guard.permits(mapped, 6), false, mapped);
      assert.equal(guard.refusal(mapped, 6), 'address 169.254.169.254 is denied by NOTIFICATIONS_TARGET_DENY');
    }
    assert.equal(guard.permits('::ffff:93.184.216.34', 6), true);
    const onlyLoopback = addressGuard({ allow: ['127.0.0.0/8'], deny: [] });
    assert.equal(onlyLoopback.permits('::ffff:127.0.0.1', 6), true);
    assert.equal(onlyLoopback.permits('::1', 6), false);
  });

  it('requires an address to be in the allow list when there is one, and lets deny win', () => {
    const guarded = addressGuard({ allow: ['10.0.0.0/8', 'fd00::/8'], deny: ['10.9.0.0/16'] });
    assert.equal(guarded.permits('10.1.2.3', 4), true);
    assert.equal(guarded.permits('fd12::1', 6), true);
    assert.equal(guarded.refusal('192.168.1.1', 4), 'address 192.168.1.1 is not in NOTIFICATIONS_TARGET_ALLOW');
    assert.equal(guarded.refusal('10.9.0.1', 4), 'address 10.9.0.1 is denied by NOTIFICATIONS_TARGET_DENY');
  });

  it('takes a block without a prefix as one address, and ignores a zone index', () => {
    const guarded = addressGuard({ allow: [], deny: ['192.0.2.7', 'fe80::/10'] });
    assert.equal(guarded.permits('192.0.2.7', 4), false);
    assert.equal(guarded.permits('192.0.2.8', 4), true);
    assert.equal(guarded.permits('fe80::1%eth0', 6), false);
  });

  it('refuses an address that is not of the family given', () => {
    assert.equal(guard.refusal('127.0.0.1', 6), 'address 127.0.0.1 is not an IPv6 address');
    assert.equal(guard.permits('not-an-address', 4), false);
  });

  it('rejects a block that is not CIDR', () => {
    assert.throws(() => addressGuard({ allow: ['example.org/8'], deny: [] }), /not a CIDR block: example.org\/8/);
  });
});

describe('addressGuard.lookup', () => {
  it('resolves a permitted name like dns.lookup, one address or all', async () => {
    const guard = addressGuard({ allow: [], deny: DEFAULT_DENY });
    const one = await lookup(guard, 'localhost', false);
    assert.equal(one.error, null);
    assert.equal(guard.permits(one.address as string, one.family as 4 | 6), true);
    const all = await lookup(guard, 'localhost', true);
    assert.equal(all.error, null);
    assert.ok(Array.isArray(all.address) && all.address.length > 0);
  });

  it('refuses a name whose every address is denied, with code ETARGETDENIED', async () => {
    const guard = addressGuard({ allow: [], deny: ['127.0.0.0/8', '::1/128'] });
    for (const all of [false, true]) {
      const { error } = await lookup(guard, 'localhost', all);
      assert.equal(error?.code, 'ETARGETDENIED');
      assert.match(error?.message ?? '', /^every address of localhost is refused: address (127\.0\.0\.1|::1) is denied by NOTIFICATIONS_TARGET_DENY/);
    }
  });

  it('drops the denied addresses of a name and keeps the permitted ones', async () => {
    const resolveAll: ResolveAll = (_hostname, _options, callback) =>
      callback(null, [{ address: '169.254.169.254', family: 4 }, { address: '::ffff:a9fe:a9fe', family: 6 }, { address: '93.184.216.34', family: 4 }]);
    const guard = addressGuard({ allow: [], deny: DEFAULT_DENY }, resolveAll);
    assert.deepEqual((await lookup(guard, 'hooks.example', true)).address, [{ address: '93.184.216.34', family: 4 }]);
    const one = await lookup(guard, 'hooks.example', false);
    assert.deepEqual([one.error, one.address, one.family], [null, '93.184.216.34', 4]);
  });

  it('judges every resolution, so a name rebound to a denied address is refused', async () => {
    const answers = ['93.184.216.34', '169.254.169.254'];
    const resolveAll: ResolveAll = (_hostname, _options, callback) => callback(null, [{ address: answers.shift() ?? '', family: 4 }]);
    const guard = addressGuard({ allow: [], deny: DEFAULT_DENY }, resolveAll);
    assert.equal((await lookup(guard, 'rebind.example', false)).error, null);
    const { error } = await lookup(guard, 'rebind.example', false);
    assert.equal(error?.message, 'every address of rebind.example is refused: address 169.254.169.254 is denied by NOTIFICATIONS_TARGET_DENY');
  });

  it('passes DNS failures on unchanged', async () => {
    const guard = addressGuard({ allow: [], deny: [] });
    const { error } = await lookup(guard, 'no-such-host.invalid', false);
    assert.equal(error?.code, 'ENOTFOUND');
  });
});
