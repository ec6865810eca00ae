import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { egressChoice, egressProxy, noProxyEntry, proxyUrlProblem } from '../../src/net/egress-proxy.js';

const PROXY = 'http://proxy.example:3128';

/** The proxy `url` would go through with NO_PROXY `noProxy`, by its shown origin; null: direct. */
function via(url: string, noProxy: string[], settings: { http?: string | null; https?: string | null } = {}): string | null {
  const choose = egressChoice({ httpProxy: settings.http ?? PROXY, httpsProxy: settings.https ?? PROXY, noProxy });
  return choose(new URL(url))?.shown ?? null;
}

describe('egress proxy URL', () => {
  it('takes http://host:port, and user:password@ as Proxy-Authorization Basic, shown without them', () => {
    const proxy = egressProxy('http://alice:p%40ss@proxy.example:3128');
    assert.equal(proxy.origin, 'http://proxy.example:3128');
    assert.equal(proxy.shown, 'http://proxy.example:3128');
    assert.equal(proxy.authorization, `Basic ${Buffer.from('alice:p@ss').toString('base64')}`);
    assert.deepEqual([proxy.hostname, proxy.port], ['proxy.example', 3128]);
    assert.equal(egressProxy('http://[::1]/').hostname, '::1');
    assert.equal(egressProxy('http://[::1]').port, 80);
    assert.equal(egressProxy(PROXY).authorization, undefined);
  });

  it('refuses what is not an http:// proxy, a path and a URL that is not one', () => {
    assert.match(proxyUrlProblem('https://proxy.example:3128') ?? '', /is not an http:\/\/ proxy URL/);
    assert.match(proxyUrlProblem('socks5://proxy.example:1080') ?? '', /is not an http:\/\/ proxy URL/);
    assert.match(proxyUrlProblem('http://proxy.example:3128/path') ?? '', /has a path/);
    assert.match(proxyUrlProblem('http://proxy.example:3128?x=1') ?? '', /has a path, query/);
    assert.match(proxyUrlProblem('proxy.example:3128') ?? '', /not an http:\/\/ proxy URL|not an absolute URL/);
    assert.match(proxyUrlProblem('not a url') ?? '', /is not an absolute URL/);
    assert.equal(proxyUrlProblem('http://u:p@proxy.example:3128/'), null);
    assert.throws(
      () => egressProxy('https://u:secret@proxy.example'),
      (error: Error) => !error.message.includes('secret'),
    );
  });
});

describe('egress proxy choice', () => {
  it('sends https targets to the https proxy and http targets to the http proxy', () => {
    const settings = { http: 'http://plain.example:3128', https: 'http://tls.example:3128' };
    assert.equal(via('https://hooks.example.org/x', [], settings), 'http://tls.example:3128');
    assert.equal(via('http://hooks.example.org/x', [], settings), 'http://plain.example:3128');
    assert.equal(egressChoice({ httpProxy: null, httpsProxy: PROXY, noProxy: [] })(new URL('http://a.example')), null);
    assert.equal(egressChoice({ httpProxy: PROXY, httpsProxy: PROXY, noProxy: [] })(new URL('amqp://a.example')), null);
  });

  it('goes direct to a NO_PROXY host and its subdomains, any case, a trailing dot ignored', () => {
    assert.equal(via('https://internal.example/x', ['internal.example']), null);
    assert.equal(via('https://hooks.INTERNAL.example./x', ['internal.example']), null);
    assert.equal(via('https://notinternal.example/x', ['internal.example']), PROXY);
    assert.equal(via('https://internal.example.org/x', ['internal.example']), PROXY);
  });

  it('goes direct to the subdomains only of .domain and *.domain', () => {
    for (const entry of ['.internal.example', '*.internal.example']) {
      assert.equal(via('https://a.b.internal.example/', [entry]), null, entry);
      assert.equal(via('https://internal.example/', [entry]), PROXY, entry);
    }
  });

  it('matches a port when the entry names one, the scheme default otherwise', () => {
    assert.equal(via('https://internal.example:8443/', ['internal.example:8443']), null);
    assert.equal(via('https://internal.example/', ['internal.example:8443']), PROXY);
    assert.equal(via('https://internal.example/', ['internal.example:443']), null);
    assert.equal(via('http://internal.example/', ['internal.example:80']), null);
    assert.equal(via('http://10.1.2.3:8080/', ['10.1.2.3:8080']), null);
    assert.equal(via('http://10.1.2.3:8081/', ['10.1.2.3:8080']), PROXY);
    assert.equal(via('http://[fd00::1]:8080/', ['[fd00::1]:8080']), null);
  });

  it('goes direct to addresses in a CIDR block, and to an address in any spelling', () => {
    assert.equal(via('http://10.1.2.3/', ['10.0.0.0/8']), null);
    assert.equal(via('http://11.1.2.3/', ['10.0.0.0/8']), PROXY);
    assert.equal(via('http://[fd00::5]/', ['fd00::/8']), null);
    assert.equal(via('http://[::1]/', ['0:0::1']), null);
    assert.equal(via('http://127.0.0.1/', ['127.0.0.1']), null);
    // A name is not resolved to be matched against blocks.
    assert.equal(via('http://localhost/', ['127.0.0.0/8']), PROXY);
  });

  it('goes direct everywhere with *', () => {
    assert.equal(via('https://anything.example/', ['*']), null);
    assert.equal(via('http://192.0.2.1/', ['*']), null);
  });

  it('refuses entries that are none of its forms, saying which forms there are', () => {
    for (const entry of ['http://a.example', 'a b', '10.0.0.0/33', 'a.example:0', 'a.example:99999', '[a.example]', 'a/8']) {
      assert.throws(() => noProxyEntry(entry), /a host name, \.domain, an IP address or CIDR block/, entry);
    }
  });
});
