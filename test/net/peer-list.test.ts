import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LOOPBACK_CIDRS, listensOnLoopbackOnly, peerList } from '../../src/net/peer-list.js';

describe('peerList', () => {
  const loopback = peerList(LOOPBACK_CIDRS);

  it('holds the addresses of its blocks and no others', () => {
    for (const address of ['127.0.0.1', '127.255.0.9', '::1']) assert.ok(loopback.includes(address), address);
    for (const address of ['10.0.0.1', '128.0.0.1', '::2', 'fe80::1', '0.0.0.0', '::']) assert.ok(!loopback.includes(address), address);
    const lan = peerList(['10.0.0.0/8', 'fd00::/8', '192.0.2.7']);
    for (const address of ['10.1.2.3', 'fd12::3', '192.0.2.7']) assert.ok(lan.includes(address), address);
    for (const address of ['192.0.2.8', '127.0.0.1', '::1']) assert.ok(!lan.includes(address), address);
  });

  it('judges an IPv4-mapped peer (a server listening on ::) by the IPv4 blocks, in any spelling', () => {
    for (const address of ['::ffff:127.0.0.1', '::ffff:7f00:1', '::FFFF:127.0.0.2']) assert.ok(loopback.includes(address), address);
    assert.ok(!loopback.includes('::ffff:10.0.0.1'));
    assert.ok(peerList(['10.0.0.0/8']).includes('::ffff:10.9.8.7'));
    assert.ok(!peerList(['10.0.0.0/8']).includes('::ffff:127.0.0.1'));
  });

  it('holds nothing that is not an address, and nothing when empty', () => {
    for (const address of [undefined, '', 'localhost', '127.0.0.1.nip.io']) assert.ok(!loopback.includes(address), String(address));
    assert.ok(!peerList([]).includes('127.0.0.1'));
  });

  it('reads a scoped IPv6 address by its address', () => {
    assert.ok(peerList(['fe80::/10']).includes('fe80::1%eth0'));
  });
});

describe('listensOnLoopbackOnly', () => {
  it('is true for loopback addresses and localhost, false for every interface, a LAN address or another name', () => {
    for (const host of ['127.0.0.1', '127.0.1.1', '::1', 'localhost', 'LOCALHOST']) assert.ok(listensOnLoopbackOnly(host), host);
    for (const host of ['0.0.0.0', '::', '192.168.1.20', '10.0.0.5', 'fd00::1', 'notifications.example.org'])
      assert.ok(!listensOnLoopbackOnly(host), host);
  });
});
