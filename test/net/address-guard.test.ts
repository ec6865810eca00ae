import assert from 'node:assert/strict';
import type { LookupAddress } from 'node:dns';
import { describe, it } from 'node:test';
import { SETTINGS } from '../../src/config/settings.js';
import { type AddressGuard, addressGuard, MAX_PENDING_LOOKUPS, type ResolveAll } from '../../src/net/address-guard.js';

const DEFAULT_DENY = SETTINGS.targetDeny.parse(SETTINGS.targetDeny.default);
const METADATA_DENIED = 'address 169.254.169.254 is denied by NOTIFICATIONS_TARGET_DENY';

function lookup(
  guard: AddressGuard,
  hostname: string,
  all: boolean,
): Promise<{ error: NodeJS.ErrnoException | null; address: string | LookupAddress[]; family?: number }> {
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

  it('refuses by default the addresses that reach this host unnamed: 0.0.0.0/8 and ::', () => {
    assert.equal(guard.refusal('0.0.0.0', 4), 'address 0.0.0.0 is denied by NOTIFICATIONS_TARGET_DENY');
    assert.equal(guard.refusal('0.1.2.3', 4), 'address 0.1.2.3 is denied by NOTIFICATIONS_TARGET_DENY');
    assert.equal(guard.refusal('::', 6), 'address :: is denied by NOTIFICATIONS_TARGET_DENY');
    assert.equal(guard.refusal('::ffff:0.0.0.0', 6), 'address 0.0.0.0 is denied by NOTIFICATIONS_TARGET_DENY');
    assert.equal(guard.permits('1.0.0.0', 4), true);
    assert.equal(guard.permits('::2', 6), true);
  });

  it('judges a NAT64 address (64:ff9b::/96) as the IPv4 address it embeds, in any spelling', () => {
    for (const nat64 of ['64:ff9b::a9fe:a9fe', '64:ff9b::169.254.169.254', '0064:FF9B:0:0:0:0:A9FE:A9FE', '64:ff9b:0::a9fe:a9fe']) {
      assert.equal(guard.refusal(nat64, 6), METADATA_DENIED, nat64);
    }
    assert.equal(guard.refusal('64:ff9b::', 6), 'address 0.0.0.0 is denied by NOTIFICATIONS_TARGET_DENY');
    assert.equal(guard.refusal('64:ff9b::100.100.100.200', 6), 'address 100.100.100.200 is denied by NOTIFICATIONS_TARGET_DENY');
    assert.equal(guard.permits('64:ff9b::5db8:d822', 6), true, 'NAT64 of 93.184.216.34');
    assert.equal(guard.permits('64:ff9b::127.0.0.1', 6), true);
    assert.equal(guard.permits('64:ff9c::a9fe:a9fe', 6), true, 'not the NAT64 prefix');
    assert.equal(guard.permits('64:ff9b::1:a9fe:a9fe', 6), true, 'not in the /96');
  });

  it('denies the mapped and NAT64 forms of a denied IPv4 address whatever the IPv6 blocks say, and obeys IPv6 blocks of those forms too', () => {
    const ipv4Only = addressGuard({ allow: [], deny: ['10.0.0.0/8'] });
    for (const form of ['::ffff:10.1.2.3', '64:ff9b::10.1.2.3', '64:ff9b::a01:203']) {
      assert.equal(ipv4Only.refusal(form, 6), 'address 10.1.2.3 is denied by NOTIFICATIONS_TARGET_DENY', form);
    }
    assert.equal(ipv4Only.permits('64:ff9b::b01:203', 6), true);
    const noNat64 = addressGuard({ allow: [], deny: ['64:ff9b::/96'] });
    assert.equal(noNat64.refusal('64:ff9b::5db8:d822', 6), 'address 64:ff9b::5db8:d822 is denied by NOTIFICATIONS_TARGET_DENY');
    assert.equal(noNat64.permits('93.184.216.34', 4), true);
  });

  it('lets an allow list name the embedded IPv4 address or the IPv6 form, and deny still wins', () => {
    const internal = addressGuard({ allow: ['10.0.0.0/8'], deny: DEFAULT_DENY });
    assert.equal(internal.permits('64:ff9b::10.1.2.3', 6), true);
    assert.equal(internal.permits('::ffff:10.1.2.3', 6), true);
    assert.equal(internal.refusal('64:ff9b::5db8:d822', 6), 'address 93.184.216.34 is not in NOTIFICATIONS_TARGET_ALLOW');
    const throughNat64 = addressGuard({ allow: ['64:ff9b::/96'], deny: DEFAULT_DENY });
    assert.equal(throughNat64.permits('64:ff9b::5db8:d822', 6), true);
    assert.equal(throughNat64.refusal('64:ff9b::a9fe:a9fe', 6), METADATA_DENIED);
    assert.equal(throughNat64.refusal('93.184.216.34', 4), 'address 93.184.216.34 is not in NOTIFICATIONS_TARGET_ALLOW');
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
      assert.match(
        error?.message ?? '',
        /^every address of localhost is refused: address (127\.0\.0\.1|::1) is denied by NOTIFICATIONS_TARGET_DENY/,
      );
    }
  });

  it('drops the denied addresses of a name and keeps the permitted ones', async () => {
    const resolveAll: ResolveAll = (_hostname, _options, callback) =>
      callback(null, [
        { address: '169.254.169.254', family: 4 },
        { address: '::ffff:a9fe:a9fe', family: 6 },
        { address: '93.184.216.34', family: 4 },
      ]);
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
    assert.equal(
      error?.message,
      'every address of rebind.example is refused: address 169.254.169.254 is denied by NOTIFICATIONS_TARGET_DENY',
    );
  });

  it('passes DNS failures on unchanged', async () => {
    const guard = addressGuard({ allow: [], deny: [] });
    const { error } = await lookup(guard, 'no-such-host.invalid', false);
    assert.equal(error?.code, 'ENOTFOUND');
  });
});

describe('addressGuard.hostRefusal', () => {
  const answering =
    (answers: Record<string, string[]>): ResolveAll =>
    (hostname, _options, callback) => {
      const addresses = answers[hostname];
      if (addresses === undefined)
        return callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []);
      callback(
        null,
        addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
      );
    };

  it('judges an IP literal as delivery does, the IPv6 one in brackets as URLs write it', async () => {
    const guard = addressGuard({ allow: [], deny: DEFAULT_DENY });
    assert.equal(await guard.hostRefusal('169.254.169.254', 1000), METADATA_DENIED);
    assert.equal(await guard.hostRefusal('[64:ff9b::a9fe:a9fe]', 1000), METADATA_DENIED);
    assert.equal(await guard.hostRefusal('[::ffff:a9fe:a9fe]', 1000), METADATA_DENIED);
    assert.equal(await guard.hostRefusal('0.0.0.0', 1000), 'address 0.0.0.0 is denied by NOTIFICATIONS_TARGET_DENY');
    assert.equal(await guard.hostRefusal('127.0.0.1', 1000), null);
    assert.equal(await guard.hostRefusal('[::1]', 1000), null);
  });

  it('refuses a name only when every address it resolves to is refused', async () => {
    const guard = addressGuard(
      { allow: [], deny: DEFAULT_DENY },
      answering({
        'metadata.example': ['169.254.169.254', '64:ff9b::a9fe:a9fe'],
        'mixed.example': ['169.254.169.254', '93.184.216.34'],
        'empty.example': [],
      }),
    );
    assert.equal(
      await guard.hostRefusal('metadata.example', 1000),
      `every address of metadata.example is refused: ${METADATA_DENIED}; ${METADATA_DENIED}`,
    );
    assert.equal(await guard.hostRefusal('mixed.example', 1000), null, 'delivery connects to the permitted address');
    assert.equal(await guard.hostRefusal('empty.example', 1000), null);
    assert.equal(await guard.hostRefusal('unknown.example', 1000), null, 'a name that does not resolve is judged at delivery');
  });

  it('resolves with the system resolver: localhost by the rules, a reserved name that does not exist accepted', async () => {
    assert.equal(await addressGuard({ allow: [], deny: DEFAULT_DENY }).hostRefusal('localhost', 2000), null);
    const noLoopback = addressGuard({ allow: [], deny: ['127.0.0.0/8', '::1/128'] });
    assert.match(
      (await noLoopback.hostRefusal('localhost', 2000)) ?? '',
      /^every address of localhost is refused: address (127\.0\.0\.1|::1) is denied by NOTIFICATIONS_TARGET_DENY/,
    );
    assert.equal(await noLoopback.hostRefusal('does-not-exist.invalid', 2000), null);
  });

  it('gives up on a resolver that does not answer in time, and leaves at most MAX_PENDING_LOOKUPS lookups out', async () => {
    const held: Array<() => void> = [];
    const asked: string[] = [];
    const resolveAll: ResolveAll = (hostname, _options, callback) => {
      asked.push(hostname);
      const answer = () => callback(null, [{ address: '169.254.169.254', family: 4 }]);
      if (hostname === 'slow.example') held.push(answer);
      else answer();
    };
    const guard = addressGuard({ allow: [], deny: DEFAULT_DENY }, resolveAll);
    for (let i = 0; i < MAX_PENDING_LOOKUPS; i++) {
      const started = performance.now();
      assert.equal(await guard.hostRefusal('slow.example', 50), null);
      // The resolver never answers: any bound shows the time-out; this one holds on a loaded machine.
      assert.ok(performance.now() - started < 5_000, 'answered after the time-out, not after the resolver');
    }
    assert.equal(await guard.hostRefusal('metadata.example', 1000), null, 'not looked up while the slow ones are out');
    assert.deepEqual(asked, new Array<string>(MAX_PENDING_LOOKUPS).fill('slow.example'));
    assert.equal(await guard.hostRefusal('169.254.169.254', 1000), METADATA_DENIED, 'literals need no lookup');
    for (const answer of held) answer();
    assert.equal(await guard.hostRefusal('metadata.example', 1000), `every address of metadata.example is refused: ${METADATA_DENIED}`);
  });
});
