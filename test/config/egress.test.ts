import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { describeEgress, egressSettings } from '../../src/config/egress.js';
import { ConfigError, loadConfig } from '../../src/config/load.js';

/** The egress settings of a service started with `env`. */
function egressOf(env: Record<string, string>) {
  return egressSettings(loadConfig({ argv: [], env, readFile: () => assert.fail('no config file expected') }), env);
}

describe('egress settings', () => {
  it('is direct when nothing is set', () => {
    assert.deepEqual(egressOf({}), { httpProxy: null, httpsProxy: null, noProxy: [] });
  });

  it('takes NOTIFICATIONS_EGRESS_PROXY for http and https targets, over the standard variables', () => {
    const env = {
      NOTIFICATIONS_EGRESS_PROXY: 'http://proxy.example:3128',
      NOTIFICATIONS_EGRESS_NO_PROXY: 'localhost,.internal.example',
      HTTPS_PROXY: 'http://other.example:8080',
      NO_PROXY: '*',
    };
    assert.deepEqual(egressOf(env), {
      httpProxy: 'http://proxy.example:3128',
      httpsProxy: 'http://proxy.example:3128',
      noProxy: ['localhost', '.internal.example'],
    });
  });

  it('falls back to HTTPS_PROXY for https targets, HTTP_PROXY for http ones, and NO_PROXY', () => {
    assert.deepEqual(egressOf({ HTTPS_PROXY: 'http://tls.example:3128', NO_PROXY: '10.0.0.0/8, .internal.example' }), {
      httpProxy: null,
      httpsProxy: 'http://tls.example:3128',
      noProxy: ['10.0.0.0/8', '.internal.example'],
    });
    assert.deepEqual(
      egressOf({ http_proxy: 'http://plain.example:3128', HTTP_PROXY: 'http://upper.example:3128' }).httpProxy,
      'http://plain.example:3128',
    );
    assert.deepEqual(egressOf({ NOTIFICATIONS_EGRESS_PROXY: 'http://p.example:1', no_proxy: 'a.example' }).noProxy, ['a.example']);
  });

  it('refuses a bad standard variable at start, naming it, its password masked', () => {
    for (const [name, raw, fragment] of [
      ['HTTPS_PROXY', 'https://u:secret@proxy.example:3128', 'is not an http:// proxy URL'],
      ['http_proxy', 'http://proxy.example:3128/path', 'has a path'],
      ['NO_PROXY', 'localhost,a b', 'contains "a b", which is not a host name'],
    ] as const) {
      assert.throws(
        () => egressOf({ [name]: raw }),
        (error: unknown) => {
          assert.ok(error instanceof ConfigError, String(error));
          assert.equal(error.setting, name);
          assert.ok(error.message.startsWith(`${name}: `) && error.message.includes(fragment), error.message);
          assert.ok(!error.message.includes('secret'), error.message);
          return true;
        },
      );
    }
  });

  it('is described for the start-up log with passwords masked', () => {
    const described = describeEgress({ httpProxy: null, httpsProxy: 'http://u:secret@proxy.example:3128', noProxy: ['localhost'] });
    assert.deepEqual(described, { http: 'direct', https: 'http://u:***@proxy.example:3128', noProxy: ['localhost'] });
  });
});
