import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { type Config, describeSettings, redactedConfig, SETTINGS } from '../../src/config/settings.js';

interface Given {
  argv?: string[];
  env?: Record<string, string | undefined>;
  files?: Record<string, string>;
}

function load({ argv = [], env = {}, files = {} }: Given): Config {
  return loadConfig({
    argv,
    env,
    readFile: (path) => {
      const text = files[path];
      if (text === undefined) throw new Error(`ENOENT: no such file or directory, open '${path}'`);
      return text;
    },
  });
}

function refusal(given: Given): ConfigError {
  try {
    load(given);
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    assert.ok(!/[\r\n]/.test(error.message), `one line: ${error.message}`);
    return error;
  }
  return assert.fail('expected a ConfigError');
}

const HOUR_MS = 3_600_000;

describe('loadConfig: defaults', () => {
  it('gives every documented default', () => {
    assert.deepEqual(
      { ...load({}) },
      {
        databaseUrl: 'sqlite:./notifications.sqlite3',
        address: '127.0.0.1',
        port: 8070,
        policyUrl: null,
        userHeader: 'http-remote-user',
        defaultUser: null,
        receiveToken: null,
        trustedProxies: ['127.0.0.0/8', '::1/128'],
        receiveAllow: null,
        retryDelaysMs: [1_000, 5_000, 30_000, 120_000, 600_000, 1_800_000, HOUR_MS, 2 * HOUR_MS, 4 * HOUR_MS, 8 * HOUR_MS, 9 * HOUR_MS],
        targetTimeoutMs: 10_000,
        targetConcurrency: 16,
        databaseTimeoutMs: 5_000,
        maxBodyBytes: 1_048_576,
        targetAllow: [],
        targetDeny: ['0.0.0.0/8', '::/128', '169.254.0.0/16', 'fe80::/10', '100.100.100.200/32', 'fd00:ec2::254/128'],
        egressProxy: null,
        egressNoProxy: null,
        secretKey: null,
        secretOverlapMs: 24 * HOUR_MS,
        targetValidation: 'off',
        origin: null,
        jsonpathDialect: 'auto',
        logLevel: 'info',
        logRequests: 'errors',
        leaseMs: 30_000,
        shutdownGraceMs: 10_000,
        retentionMs: 30 * 24 * HOUR_MS,
        userSubscriptions: 1000,
      },
    );
  });

  it('retries for at least 24 hours by default', () => {
    const totalMs = load({}).retryDelaysMs.reduce((sum, delay) => sum + delay, 0);
    assert.ok(totalMs >= 24 * HOUR_MS, `${totalMs / HOUR_MS} h`);
  });

  it('treats an empty variable as unset', () => {
    const config = load({ env: { NOTIFICATIONS_PORT: '', NOTIFICATIONS_POLICY_URL: '', NOTIFICATIONS_TYPO: '' } });
    assert.equal(config.port, 8070);
    assert.equal(config.policyUrl, null);
  });
});

describe('loadConfig: precedence flag > env > file > default', () => {
  const files = {
    'c.json': JSON.stringify({ NOTIFICATIONS_PORT: 8001, NOTIFICATIONS_ADDRESS: '0.0.0.0', NOTIFICATIONS_LOG_LEVEL: 'warn' }),
  };
  const env = { NOTIFICATIONS_CONFIG: 'c.json', NOTIFICATIONS_PORT: '8002', NOTIFICATIONS_ADDRESS: '::1' };

  it('takes the flag over the environment, the file and the default', () => {
    const config = load({ argv: ['--port', '8003'], env, files });
    assert.deepEqual([config.port, config.address, config.logLevel, config.shutdownGraceMs], [8003, '::1', 'warn', 10_000]);
  });

  it('takes the environment over the file', () => {
    assert.equal(load({ env, files }).port, 8002);
  });

  it('takes the file over the default, and numbers as values', () => {
    assert.equal(load({ env: { NOTIFICATIONS_CONFIG: 'c.json' }, files }).port, 8001);
  });

  it('accepts --flag value and --flag=value forms', () => {
    const config = load({ argv: ['--address=::', '--database-url', 'sqlite::memory:', '--port=0'] });
    assert.deepEqual([config.address, config.databaseUrl, config.port], ['::', 'sqlite::memory:', 0]);
  });

  it('reads the file named by --config rather than NOTIFICATIONS_CONFIG', () => {
    const config = load({
      argv: ['--config=b.json'],
      env: { NOTIFICATIONS_CONFIG: 'a.json' },
      files: { 'a.json': '{"NOTIFICATIONS_PORT": "1"}', 'b.json': '{"NOTIFICATIONS_PORT": "2"}' },
    });
    assert.equal(config.port, 2);
  });

  it('says where a refused value came from', () => {
    assert.equal(
      refusal({ argv: ['--port', '80x'] }).message,
      'NOTIFICATIONS_PORT: "80x" is not a port (an integer from 0 to 65535) (set by --port)',
    );
    assert.equal(
      refusal({ env: { NOTIFICATIONS_PORT: '80x' } }).message,
      'NOTIFICATIONS_PORT: "80x" is not a port (an integer from 0 to 65535)',
    );
    assert.equal(
      refusal({ argv: ['--config', 'c.json'], files: { 'c.json': '{"NOTIFICATIONS_PORT": "80x"}' } }).message,
      'NOTIFICATIONS_PORT: "80x" is not a port (an integer from 0 to 65535) (in config file "c.json")',
    );
  });
});

describe('loadConfig: unknown and malformed input', () => {
  const cases: Array<[string, Given, string]> = [
    [
      'an unknown flag',
      { argv: ['--prot', '1'] },
      '--prot: unknown flag (accepted: --address, --config, --database-url, --default-user, --port; did you mean --port?)',
    ],
    ['a positional argument', { argv: ['serve'] }, 'command line: unexpected argument "serve"'],
    ['a flag without a value', { argv: ['--port'] }, '--port: needs a value'],
    ['a flag followed by another flag', { argv: ['--address', '--port', '1'] }, '--address: needs a value'],
    ['an empty --flag=', { argv: ['--port='] }, '--port: needs a value'],
    ['a repeated flag', { argv: ['--port', '1', '--port=2'] }, '--port: is given more than once'],
    [
      'a misspelt variable',
      { env: { NOTIFICATIONS_RETRY_DELAY: '1s' } },
      'NOTIFICATIONS_RETRY_DELAY: unknown environment variable, not a setting; did you mean NOTIFICATIONS_RETRY_DELAYS?',
    ],
    [
      'an unrelated variable',
      { env: { NOTIFICATIONS_COLOUR: 'blue' } },
      'NOTIFICATIONS_COLOUR: unknown environment variable, not a setting; --help lists the settings',
    ],
    [
      'an unknown file key',
      { argv: ['--config', 'c.json'], files: { 'c.json': '{"NOTIFICATIONS_PORTS": 1}' } },
      'NOTIFICATIONS_PORTS: unknown key in config file "c.json", not a setting; did you mean NOTIFICATIONS_PORT?',
    ],
    [
      'NOTIFICATIONS_CONFIG inside the file',
      { argv: ['--config', 'c.json'], files: { 'c.json': '{"NOTIFICATIONS_CONFIG": "x"}' } },
      'NOTIFICATIONS_CONFIG: unknown key',
    ],
    [
      'a boolean in the file',
      { argv: ['--config', 'c.json'], files: { 'c.json': '{"NOTIFICATIONS_PORT": true}' } },
      'NOTIFICATIONS_PORT: must be a string or a number in config file "c.json", not boolean',
    ],
    [
      'a list in the file',
      { argv: ['--config', 'c.json'], files: { 'c.json': '{"NOTIFICATIONS_TARGET_DENY": ["::1"]}' } },
      'NOTIFICATIONS_TARGET_DENY: must be a string or a number in config file "c.json", not an array',
    ],
    [
      'a file that is not an object',
      { argv: ['--config', 'c.json'], files: { 'c.json': '[]' } },
      '--config: the config file "c.json" must hold a JSON object',
    ],
    [
      'a missing file',
      { env: { NOTIFICATIONS_CONFIG: 'gone.json' } },
      'NOTIFICATIONS_CONFIG: cannot read the config file "gone.json": ENOENT',
    ],
    [
      'a file that is not JSON',
      { argv: ['--config', 'c.json'], files: { 'c.json': '{"NOTIFICATIONS_SECRET_KEY": hunter2}' } },
      '--config: the config file "c.json" is not valid JSON',
    ],
    [
      'a value with line breaks',
      { argv: ['--config', 'c.json'], files: { 'c.json': '{\n"NOTIFICATIONS_PORT":\n"x\\ny"}' } },
      'NOTIFICATIONS_PORT: "x\\ny" is not a port',
    ],
  ];
  for (const [name, given, expected] of cases) {
    it(`refuses ${name}`, () => {
      const message = refusal(given).message;
      assert.ok(message.startsWith(expected), `${message}\n  should start with: ${expected}`);
      assert.ok(!message.includes('hunter2'), message);
    });
  }

  it('lets through the variables that are not settings but are read elsewhere', () => {
    const env = { NOTIFICATIONS_TEST_DATABASE_URL: 'postgres://t/t', NOTIFICATIONS_BENCH_DATABASE_URL: 'postgres://b/b', OTHER_THING: 'x' };
    assert.equal(load({ env }).port, 8070);
  });

  it('never reads process: only the given sources count', () => {
    process.env.NOTIFICATIONS_PORT_SHOULD_NOT_BE_SEEN = '1';
    try {
      assert.equal(load({}).port, 8070);
    } finally {
      delete process.env.NOTIFICATIONS_PORT_SHOULD_NOT_BE_SEEN;
    }
  });
});

describe('loadConfig: result', () => {
  it('is deeply frozen', () => {
    const config = load({ env: { NOTIFICATIONS_TARGET_ALLOW: '10.0.0.0/8' } });
    assert.ok(Object.isFrozen(config));
    for (const list of [config.retryDelaysMs, config.targetAllow, config.targetDeny]) assert.ok(Object.isFrozen(list));
    assert.throws(() => {
      (config as { port: number }).port = 1;
    }, TypeError);
    assert.throws(() => (config.retryDelaysMs as number[]).push(1), TypeError);
  });
});

describe('redactedConfig', () => {
  it('hides the secret key, the token and URL passwords, and copies the rest', () => {
    const config = load({
      env: {
        NOTIFICATIONS_SECRET_KEY: `${Buffer.alloc(32, 7).toString('base64')},${Buffer.alloc(32, 8).toString('hex')}`,
        NOTIFICATIONS_RECEIVE_TOKEN: 'hunter2',
        NOTIFICATIONS_DATABASE_URL: 'postgres://app:hunter2@db:5432/n?sslpassword=hunter2',
        NOTIFICATIONS_POLICY_URL: 'https://svc:hunter2@policy.example/v1',
      },
    });
    const redacted = redactedConfig(config);
    assert.equal(redacted.secretKey, '(set)');
    assert.equal(redacted.receiveToken, '(set)');
    assert.equal(redacted.databaseUrl, 'postgres://app:***@db:5432/n?sslpassword=***');
    assert.equal(redacted.policyUrl, 'https://svc:***@policy.example/v1');
    assert.equal(redacted.port, 8070);
    assert.ok(!JSON.stringify(redacted).includes('hunter2'));
    assert.ok(!Object.isFrozen(redacted.targetDeny), 'a plain copy');
  });

  it('keeps unset secrets null and URLs without passwords as they are', () => {
    const redacted = redactedConfig(load({ env: { NOTIFICATIONS_DATABASE_URL: 'postgres://db:5432/n' } }));
    assert.deepEqual([redacted.secretKey, redacted.receiveToken, redacted.databaseUrl], [null, null, 'postgres://db:5432/n']);
  });
});

describe('describeSettings', () => {
  it('lists every setting once with a default and a one-line description', () => {
    const described = describeSettings();
    assert.equal(described.length, Object.keys(SETTINGS).length);
    assert.equal(new Set(described.map((setting) => setting.name)).size, described.length);
    for (const setting of described) {
      assert.match(setting.name, /^NOTIFICATIONS_[A-Z_]+$/);
      assert.ok(setting.default !== '' && setting.description !== '' && !setting.description.includes('\n'), setting.name);
    }
    assert.deepEqual(described.find((setting) => setting.name === 'NOTIFICATIONS_POLICY_URL')?.default, 'unset: allow-all mode');
    assert.deepEqual(
      described.find((setting) => setting.name === 'NOTIFICATIONS_PORT'),
      {
        name: 'NOTIFICATIONS_PORT',
        flag: '--port',
        default: '8070',
        description: 'port the HTTP server listens on (0: any free port)',
      },
    );
  });
});
