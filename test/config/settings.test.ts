import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Keyring } from '../../src/config/keyring.js';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { type Config, SETTINGS } from '../../src/config/settings.js';

function loadEnv(env: Record<string, string>): Config {
  return loadConfig({ argv: [], env, readFile: () => assert.fail('no config file expected') });
}

const KEY_HEX = '00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff';
const KEY_BASE64 = Buffer.from(KEY_HEX, 'hex').toString('base64');
const OTHER_KEY = Buffer.alloc(32, 9);
const keyring = (...keys: Buffer[]) => new Keyring(keys);

// [variable, given text, field, parsed value]
const VALID: Array<[string, string, keyof Config, unknown]> = [
  ['NOTIFICATIONS_DATABASE_URL', 'sqlite:./data/n.sqlite3', 'databaseUrl', 'sqlite:./data/n.sqlite3'],
  ['NOTIFICATIONS_DATABASE_URL', 'sqlite:/var/lib/n.sqlite3', 'databaseUrl', 'sqlite:/var/lib/n.sqlite3'],
  ['NOTIFICATIONS_DATABASE_URL', 'sqlite::memory:', 'databaseUrl', 'sqlite::memory:'],
  ['NOTIFICATIONS_DATABASE_URL', 'postgres://u:p@db:5432/n', 'databaseUrl', 'postgres://u:p@db:5432/n'],
  ['NOTIFICATIONS_DATABASE_URL', 'postgresql://db/n', 'databaseUrl', 'postgresql://db/n'],
  ['NOTIFICATIONS_ADDRESS', '0.0.0.0', 'address', '0.0.0.0'],
  ['NOTIFICATIONS_ADDRESS', '::', 'address', '::'],
  ['NOTIFICATIONS_ADDRESS', 'localhost', 'address', 'localhost'],
  ['NOTIFICATIONS_PORT', '0', 'port', 0],
  ['NOTIFICATIONS_PORT', '65535', 'port', 65535],
  ['NOTIFICATIONS_POLICY_URL', 'http://policy:8181/v1', 'policyUrl', 'http://policy:8181/v1'],
  ['NOTIFICATIONS_POLICY_URL', 'https://policy.example', 'policyUrl', 'https://policy.example'],
  ['NOTIFICATIONS_USER_HEADER', 'X-Forwarded-User', 'userHeader', 'x-forwarded-user'],
  ['NOTIFICATIONS_DEFAULT_USER', 'alice', 'defaultUser', 'alice'],
  ['NOTIFICATIONS_RECEIVE_TOKEN', 's3cr3t-t0ken', 'receiveToken', 's3cr3t-t0ken'],
  ['NOTIFICATIONS_TRUSTED_PROXIES', '10.1.2.3, fd00::/8', 'trustedProxies', ['10.1.2.3/32', 'fd00::/8']],
  ['NOTIFICATIONS_RECEIVE_ALLOW', '192.0.2.0/24,::1', 'receiveAllow', ['192.0.2.0/24', '::1/128']],
  ['NOTIFICATIONS_RETRY_DELAYS', '1s, 5s,2m', 'retryDelaysMs', [1000, 5000, 120_000]],
  ['NOTIFICATIONS_RETRY_DELAYS', '0ms', 'retryDelaysMs', [0]],
  ['NOTIFICATIONS_TARGET_TIMEOUT', '250ms', 'targetTimeoutMs', 250],
  ['NOTIFICATIONS_TARGET_TIMEOUT', '25s', 'targetTimeoutMs', 25_000],
  ['NOTIFICATIONS_TARGET_CONCURRENCY', '1', 'targetConcurrency', 1],
  ['NOTIFICATIONS_TARGET_CONCURRENCY', '64', 'targetConcurrency', 64],
  ['NOTIFICATIONS_DATABASE_TIMEOUT', '250ms', 'databaseTimeoutMs', 250],
  ['NOTIFICATIONS_DATABASE_TIMEOUT', '30s', 'databaseTimeoutMs', 30_000],
  ['NOTIFICATIONS_MAX_BODY', '512', 'maxBodyBytes', 512],
  ['NOTIFICATIONS_MAX_BODY', '512b', 'maxBodyBytes', 512],
  ['NOTIFICATIONS_MAX_BODY', '64kb', 'maxBodyBytes', 65_536],
  ['NOTIFICATIONS_MAX_BODY', '2MB', 'maxBodyBytes', 2_097_152],
  ['NOTIFICATIONS_TARGET_ALLOW', '10.0.0.0/8, fd00::/8', 'targetAllow', ['10.0.0.0/8', 'fd00::/8']],
  ['NOTIFICATIONS_TARGET_ALLOW', '192.168.1.7', 'targetAllow', ['192.168.1.7/32']],
  ['NOTIFICATIONS_TARGET_DENY', '::1', 'targetDeny', ['::1/128']],
  ['NOTIFICATIONS_TARGET_DENY', '0.0.0.0/0', 'targetDeny', ['0.0.0.0/0']],
  ['NOTIFICATIONS_EGRESS_PROXY', 'http://proxy.example:3128', 'egressProxy', 'http://proxy.example:3128'],
  ['NOTIFICATIONS_EGRESS_PROXY', 'http://u:p@10.0.0.1:3128/', 'egressProxy', 'http://u:p@10.0.0.1:3128/'],
  [
    'NOTIFICATIONS_EGRESS_NO_PROXY',
    'localhost, .internal.example,10.0.0.0/8,[::1]:8080,*',
    'egressNoProxy',
    ['localhost', '.internal.example', '10.0.0.0/8', '[::1]:8080', '*'],
  ],
  ['NOTIFICATIONS_SECRET_KEY', KEY_HEX, 'secretKey', keyring(Buffer.from(KEY_HEX, 'hex'))],
  ['NOTIFICATIONS_SECRET_KEY', KEY_HEX.toUpperCase(), 'secretKey', keyring(Buffer.from(KEY_HEX, 'hex'))],
  ['NOTIFICATIONS_SECRET_KEY', KEY_BASE64, 'secretKey', keyring(Buffer.from(KEY_HEX, 'hex'))],
  ['NOTIFICATIONS_SECRET_KEY', `${KEY_BASE64}\n`, 'secretKey', keyring(Buffer.from(KEY_HEX, 'hex'))],
  ['NOTIFICATIONS_SECRET_KEY', `${OTHER_KEY.toString('base64')},${KEY_HEX}`, 'secretKey', keyring(OTHER_KEY, Buffer.from(KEY_HEX, 'hex'))],
  ['NOTIFICATIONS_SECRET_KEY', `${KEY_HEX} , ${OTHER_KEY.toString('hex')}\n`, 'secretKey', keyring(Buffer.from(KEY_HEX, 'hex'), OTHER_KEY)],
  ['NOTIFICATIONS_JSONPATH_DIALECT', 'rfc9535', 'jsonpathDialect', 'rfc9535'],
  ['NOTIFICATIONS_JSONPATH_DIALECT', 'jsonpath2-first', 'jsonpathDialect', 'jsonpath2-first'],
  ['NOTIFICATIONS_LOG_LEVEL', 'silent', 'logLevel', 'silent'],
  ['NOTIFICATIONS_LOG_LEVEL', 'trace', 'logLevel', 'trace'],
  ['NOTIFICATIONS_LOG_REQUESTS', 'off', 'logRequests', 'off'],
  ['NOTIFICATIONS_LOG_REQUESTS', 'all', 'logRequests', 'all'],
  ['NOTIFICATIONS_LEASE', '2h', 'leaseMs', 7_200_000],
  ['NOTIFICATIONS_SECRET_OVERLAP', '0s', 'secretOverlapMs', 0],
  ['NOTIFICATIONS_TARGET_VALIDATION', 'handshake', 'targetValidation', 'handshake'],
  ['NOTIFICATIONS_ORIGIN', 'notifications.example.org', 'origin', 'notifications.example.org'],
  ['NOTIFICATIONS_SECRET_OVERLAP', '36h', 'secretOverlapMs', 129_600_000],
  ['NOTIFICATIONS_SHUTDOWN_GRACE', '0s', 'shutdownGraceMs', 0],
  ['NOTIFICATIONS_SHUTDOWN_GRACE', '1d', 'shutdownGraceMs', 86_400_000],
  ['NOTIFICATIONS_RETENTION', 'off', 'retentionMs', 'off'],
  ['NOTIFICATIONS_USER_SUBSCRIPTIONS', 'off', 'userSubscriptions', 'off'],
  ['NOTIFICATIONS_USER_SUBSCRIPTIONS', '1', 'userSubscriptions', 1],
  ['NOTIFICATIONS_USER_SUBSCRIPTIONS', '250000', 'userSubscriptions', 250_000],
  ['NOTIFICATIONS_RETENTION', '2s', 'retentionMs', 2_000],
  ['NOTIFICATIONS_RETENTION', '90d', 'retentionMs', 7_776_000_000],
  ['NOTIFICATIONS_RETENTION', '36500d', 'retentionMs', 3_153_600_000_000],
];

// [variable, given text, part of the message after the setting name]
const INVALID: Array<[string, string, string]> = [
  ['NOTIFICATIONS_DATABASE_URL', 'sqlite:', 'has no file path'],
  ['NOTIFICATIONS_DATABASE_URL', 'mysql://db/n', 'is not a database URL (sqlite:<path>'],
  ['NOTIFICATIONS_DATABASE_URL', 'postgres://db:99999999/n', 'is not a database URL'],
  ['NOTIFICATIONS_DATABASE_URL', './n.sqlite3', 'is not a database URL'],
  ['NOTIFICATIONS_ADDRESS', 'local host', 'is not an address to listen on'],
  ['NOTIFICATIONS_ADDRESS', '300.1.1.1:80', 'is not an address to listen on'],
  ['NOTIFICATIONS_PORT', '80x', '"80x" is not a port (an integer from 0 to 65535)'],
  ['NOTIFICATIONS_PORT', '65536', 'is not a port'],
  ['NOTIFICATIONS_PORT', '-1', 'is not a port'],
  ['NOTIFICATIONS_PORT', '80.5', 'is not a port'],
  ['NOTIFICATIONS_POLICY_URL', 'policy:8181', 'is not an absolute http:// or https:// URL'],
  ['NOTIFICATIONS_POLICY_URL', '/v1/check', 'is not an absolute http:// or https:// URL'],
  ['NOTIFICATIONS_POLICY_URL', 'ftp://policy/', 'is not an absolute http:// or https:// URL'],
  ['NOTIFICATIONS_USER_HEADER', 'Remote User', 'is not an HTTP header name'],
  ['NOTIFICATIONS_USER_HEADER', 'X-User:', 'is not an HTTP header name'],
  ['NOTIFICATIONS_DEFAULT_USER', '   ', 'is blank'],
  ['NOTIFICATIONS_RECEIVE_TOKEN', 'two words', 'is not a bearer token'],
  ['NOTIFICATIONS_TRUSTED_PROXIES', 'proxy.example.org', 'is not a CIDR block'],
  ['NOTIFICATIONS_RECEIVE_ALLOW', '10.0.0.0/8,', 'has an empty entry'],
  ['NOTIFICATIONS_RETRY_DELAYS', '1s,,5s', 'has an empty entry'],
  ['NOTIFICATIONS_RETRY_DELAYS', '1s,5x', 'contains "5x", which is not a duration'],
  ['NOTIFICATIONS_RETRY_DELAYS', '1s,30', 'contains "30", which has no unit'],
  ['NOTIFICATIONS_TARGET_TIMEOUT', '10', '"10" has no unit (write ms, s, m, h or d after the number, e.g. "10s")'],
  ['NOTIFICATIONS_TARGET_TIMEOUT', '1.5s', 'is not a duration (an integer followed by ms, s, m, h or d'],
  ['NOTIFICATIONS_TARGET_TIMEOUT', '10 s', 'is not a duration'],
  ['NOTIFICATIONS_TARGET_TIMEOUT', '10S', 'is not a duration'],
  ['NOTIFICATIONS_TARGET_TIMEOUT', '0s', 'is too short (at least 1ms)'],
  ['NOTIFICATIONS_TARGET_TIMEOUT', '25d', 'is too long (at most 24d)'],
  ['NOTIFICATIONS_TARGET_CONCURRENCY', '0', '"0" is not an integer from 1 to 1024'],
  ['NOTIFICATIONS_TARGET_CONCURRENCY', '2.5', 'is not an integer from 1 to 1024'],
  ['NOTIFICATIONS_DATABASE_TIMEOUT', '5', 'has no unit'],
  ['NOTIFICATIONS_DATABASE_TIMEOUT', '10ms', 'is too short (at least 100ms)'],
  ['NOTIFICATIONS_MAX_BODY', '1gb', 'is not a size (an integer of bytes, optionally followed by b, kb or mb'],
  ['NOTIFICATIONS_MAX_BODY', '1.5mb', 'is not a size'],
  ['NOTIFICATIONS_MAX_BODY', '0kb', 'is too small'],
  ['NOTIFICATIONS_MAX_BODY', '99999999999999999mb', 'is too large'],
  ['NOTIFICATIONS_TARGET_ALLOW', '10.0.0.0/33', '"10.0.0.0/33" has a prefix outside 0 to 32'],
  ['NOTIFICATIONS_TARGET_ALLOW', 'fd00::/129', 'has a prefix outside 0 to 128'],
  ['NOTIFICATIONS_TARGET_ALLOW', '10.0.0.0/8,10.0.0/8', 'contains "10.0.0/8", which is not a CIDR block'],
  ['NOTIFICATIONS_TARGET_DENY', 'example.com', 'is not a CIDR block'],
  ['NOTIFICATIONS_TARGET_DENY', 'fe80::1%eth0/64', 'is not a CIDR block'],
  ['NOTIFICATIONS_TARGET_DENY', '10.0.0.0/', 'has a prefix outside 0 to 32'],
  ['NOTIFICATIONS_EGRESS_PROXY', 'https://proxy.example:3128', 'is not an http:// proxy URL'],
  ['NOTIFICATIONS_EGRESS_PROXY', 'http://u:secret@proxy.example:3128/squid', '"http://u:***@proxy.example:3128/squid" has a path'],
  ['NOTIFICATIONS_EGRESS_PROXY', 'proxy.example:3128', 'proxy URL'],
  ['NOTIFICATIONS_EGRESS_NO_PROXY', 'localhost,http://a.example', 'contains "http://a.example", which is not a host name, .domain'],
  ['NOTIFICATIONS_EGRESS_NO_PROXY', '10.0.0.0/33', 'is not a CIDR block'],
  [
    'NOTIFICATIONS_SECRET_KEY',
    KEY_HEX.slice(2),
    'is not 32 bytes written as 64 hex characters or 44 base64 characters; make one with: openssl rand -base64 32',
  ],
  ['NOTIFICATIONS_SECRET_KEY', Buffer.alloc(16).toString('base64'), 'openssl rand -base64 32'],
  ['NOTIFICATIONS_SECRET_KEY', 'correct horse battery staple', 'openssl rand -base64 32'],
  ['NOTIFICATIONS_JSONPATH_DIALECT', 'xpath', 'is not one of auto, jsonpath2-first, rfc9535, jsonpath2'],
  ['NOTIFICATIONS_LOG_LEVEL', 'INFO', 'is not one of fatal, error, warn, info, debug, trace, silent'],
  ['NOTIFICATIONS_LOG_REQUESTS', 'none', 'is not one of off, errors, all'],
  ['NOTIFICATIONS_LEASE', '30', 'has no unit'],
  ['NOTIFICATIONS_LEASE', '5s', '5000ms must be longer than NOTIFICATIONS_TARGET_TIMEOUT (10000ms)'],
  ['NOTIFICATIONS_SECRET_OVERLAP', '24', 'has no unit'],
  ['NOTIFICATIONS_TARGET_VALIDATION', 'consent', 'is not one of'],
  ['NOTIFICATIONS_ORIGIN', 'two words', 'is not an origin name'],
  ['NOTIFICATIONS_SHUTDOWN_GRACE', 'soon', 'is not a duration'],
  [
    'NOTIFICATIONS_RETENTION',
    '0',
    '"0" would purge every event as soon as it is finished; write a duration such as "30d", or "off" to keep every event',
  ],
  ['NOTIFICATIONS_RETENTION', '0d', 'would purge every event as soon as it is finished'],
  ['NOTIFICATIONS_RETENTION', '-1d', '"-1d" is negative; write a duration such as "30d", or "off"'],
  ['NOTIFICATIONS_RETENTION', '30', 'has no unit'],
  [
    'NOTIFICATIONS_RETENTION',
    'OFF',
    'is not a duration (an integer followed by ms, s, m, h or d, e.g. "30s"); write a duration such as "30d", or "off"',
  ],
  ['NOTIFICATIONS_RETENTION', 'never', 'is not a duration'],
  ['NOTIFICATIONS_RETENTION', '36501d', 'is too long (at most 36500d)'],
  [
    'NOTIFICATIONS_USER_SUBSCRIPTIONS',
    '0',
    'NOTIFICATIONS_USER_SUBSCRIPTIONS: "0" is not an integer from 1 to 999999999; write "off" for no limit',
  ],
  ['NOTIFICATIONS_USER_SUBSCRIPTIONS', '-5', 'is not an integer from 1 to 999999999; write "off" for no limit'],
  ['NOTIFICATIONS_USER_SUBSCRIPTIONS', '1e3', 'is not an integer from 1 to 999999999'],
  ['NOTIFICATIONS_USER_SUBSCRIPTIONS', '1000000000', 'is not an integer from 1 to 999999999'],
  ['NOTIFICATIONS_USER_SUBSCRIPTIONS', 'none', 'write "off" for no limit'],
];

describe('settings: valid values', () => {
  for (const [variable, raw, field, expected] of VALID) {
    it(`${variable}=${JSON.stringify(raw)} gives ${field} ${JSON.stringify(expected)}`, () => {
      assert.deepEqual(loadEnv({ [variable]: raw })[field], expected);
    });
  }
});

describe('settings: invalid values', () => {
  for (const [variable, raw, fragment] of INVALID) {
    it(`${variable}=${JSON.stringify(raw)} is refused`, () => {
      assert.throws(
        () => loadEnv({ [variable]: raw }),
        (error: unknown) => {
          assert.ok(error instanceof ConfigError, String(error));
          assert.equal(error.setting, variable);
          assert.ok(error.message.startsWith(`${variable}: `), error.message);
          assert.ok(error.message.includes(fragment), `${error.message}\n  should include: ${fragment}`);
          assert.ok(!/[\r\n]/.test(error.message), 'one line');
          return true;
        },
      );
    });
  }

  it('covers every setting with both a valid and an invalid form', () => {
    for (const setting of Object.values(SETTINGS)) {
      assert.ok(
        VALID.some(([variable]) => variable === setting.env),
        `no valid case for ${setting.env}`,
      );
      assert.ok(
        INVALID.some(([variable]) => variable === setting.env),
        `no invalid case for ${setting.env}`,
      );
    }
  });
});

describe('settings: secrets in error messages', () => {
  const secrets: Array<[string, string]> = [
    ['NOTIFICATIONS_SECRET_KEY', 'hunter2-is-not-a-key'],
    ['NOTIFICATIONS_SECRET_KEY', `${KEY_HEX}ff`],
    ['NOTIFICATIONS_SECRET_KEY', `${KEY_BASE64},hunter2-is-not-a-key`],
    ['NOTIFICATIONS_SECRET_KEY', `${KEY_HEX},,${KEY_BASE64}`],
    ['NOTIFICATIONS_RECEIVE_TOKEN', 'hunter2 with a space'],
  ];
  for (const [variable, secret] of secrets) {
    it(`${variable} is never echoed`, () => {
      assert.throws(
        () => loadEnv({ [variable]: secret }),
        (error: unknown) => {
          assert.ok(error instanceof ConfigError);
          assert.ok(!error.message.includes('hunter2') && !error.message.includes(KEY_HEX), error.message);
          assert.match(error.message, new RegExp(`^${variable}: the value \\(hidden, ${secret.length} characters\\)`));
          return true;
        },
      );
    });
  }

  it('NOTIFICATIONS_SECRET_KEY names a wrong key by its place among several', () => {
    assert.throws(
      () => loadEnv({ NOTIFICATIONS_SECRET_KEY: `${KEY_BASE64},hunter2-is-not-a-key` }),
      /has a key \(number 2 of 2\) that is not 32 bytes/,
    );
    assert.throws(() => loadEnv({ NOTIFICATIONS_SECRET_KEY: `${KEY_HEX},` }), /has an empty key/);
  });

  it('masks the password of a refused database URL', () => {
    assert.throws(
      () => loadEnv({ NOTIFICATIONS_DATABASE_URL: 'postgres://app:hunter2@db:99999999/n' }),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.ok(!error.message.includes('hunter2'), error.message);
        assert.ok(error.message.includes('"postgres://app:***@db:99999999/n"'), error.message);
        return true;
      },
    );
  });
});
