// Loads the configuration once at start-up: flags > environment > config file >
// default. Every problem is a ConfigError with a one-line message; the caller
// passes argv, env and readFile, so this module never touches `process`.

import { maskUrlPassword } from '../url-password.js';
import { type Config, SETTING_KEYS, SETTINGS, type Setting, type SettingInfo } from './settings.js';
import { InvalidValue } from './values.js';

export class ConfigError extends Error {
  /** `setting` names what is wrong: a variable, a flag or the command line. */
  constructor(
    readonly setting: string,
    detail: string,
  ) {
    // Start-up prints the message as its one line, so no line breaks may get in.
    super(`${setting}: ${detail}`.replace(/\s*[\r\n\u2028\u2029]+\s*/g, ' '));
    this.name = 'ConfigError';
  }
}

export interface ConfigSources {
  /** Command-line arguments after the program name: process.argv.slice(2). */
  argv: readonly string[];
  env: Record<string, string | undefined>;
  /** Reads the config file as text; may throw. */
  readFile: (path: string) => string;
}

/** A value given for a setting, and where it was given (empty for the environment). */
interface GivenValue {
  raw: string;
  source: string;
}

/** One source of values, by environment variable name. */
type Layer = Map<string, GivenValue>;

const CONFIG_FLAG = '--config';
const CONFIG_ENV = 'NOTIFICATIONS_CONFIG';
/** Read elsewhere (the config file path; the tests' and the benchmark's own settings), so not typos. */
const readElsewhere = (name: string) => name === CONFIG_ENV || /^NOTIFICATIONS_(TEST|BENCH)_/.test(name);

const SETTINGS_BY_ENV = new Map<string, SettingInfo>(SETTING_KEYS.map((key) => [SETTINGS[key].env, SETTINGS[key]]));
const ENV_BY_FLAG = new Map<string, string>(
  SETTING_KEYS.flatMap((key) => {
    const { flag, env } = SETTINGS[key];
    return flag === undefined ? [] : [[flag, env] as const];
  }),
);
const FLAGS = [...ENV_BY_FLAG.keys(), CONFIG_FLAG].sort();

export function loadConfig(sources: ConfigSources): Config {
  const flags = readFlags(sources.argv);
  const env = readEnv(sources.env);
  const configEnv = sources.env[CONFIG_ENV];
  const file =
    flags.configPath !== undefined
      ? readConfigFile(flags.configPath, CONFIG_FLAG, sources.readFile)
      : configEnv
        ? readConfigFile(configEnv, CONFIG_ENV, sources.readFile)
        : new Map();
  const layers = [flags.values, env, file];

  const config = {} as { -readonly [K in keyof Config]: Config[K] };
  for (const key of SETTING_KEYS) resolveInto(config, key, layers);

  if (config.leaseMs <= config.targetTimeoutMs) {
    throw new ConfigError(
      SETTINGS.leaseMs.env,
      `${config.leaseMs}ms must be longer than ${SETTINGS.targetTimeoutMs.env} (${config.targetTimeoutMs}ms), ` +
        'or a delivery could be claimed again while its request is still running',
    );
  }
  return deepFreeze(config);
}

function resolveInto<K extends keyof Config>(config: { -readonly [P in keyof Config]: Config[P] }, key: K, layers: Layer[]): void {
  const setting: Setting<Config[K]> = SETTINGS[key];
  const given = layers.map((layer) => layer.get(setting.env)).find((value) => value !== undefined);
  const raw = given?.raw ?? setting.default;
  if (raw === null) {
    // Only nullable settings have a null default (Setting<V> enforces it).
    config[key] = null as Config[K];
    return;
  }
  try {
    config[key] = setting.parse(raw);
  } catch (error) {
    if (!(error instanceof InvalidValue)) throw error;
    const source = given === undefined ? ' (the default)' : given.source === '' ? '' : ` (${given.source})`;
    throw new ConfigError(setting.env, `${showValue(setting, raw)} ${error.reason}${source}`);
  }
}

function readFlags(argv: readonly string[]): { values: Layer; configPath: string | undefined } {
  const values: Layer = new Map();
  let configPath: string | undefined;
  const seen = new Set<string>();
  const args = argv[Symbol.iterator]();
  for (const arg of args) {
    if (!arg.startsWith('--')) {
      throw new ConfigError('command line', `unexpected argument ${quote(arg)} (flags: ${FLAGS.join(', ')})`);
    }
    const equals = arg.indexOf('=');
    const flag = equals < 0 ? arg : arg.slice(0, equals);
    const env = ENV_BY_FLAG.get(flag);
    if (env === undefined && flag !== CONFIG_FLAG) {
      throw new ConfigError(flag, `unknown flag (accepted: ${FLAGS.join(', ')}${suggestion(flag, FLAGS)})`);
    }
    const value = equals < 0 ? args.next().value : arg.slice(equals + 1);
    if (value === undefined || value === '' || (equals < 0 && value.startsWith('--'))) {
      throw new ConfigError(flag, `needs a value (${flag} VALUE or ${flag}=VALUE)`);
    }
    if (seen.has(flag)) throw new ConfigError(flag, 'is given more than once');
    seen.add(flag);
    if (env === undefined) configPath = value;
    else values.set(env, { raw: value, source: `set by ${flag}` });
  }
  return { values, configPath };
}

function readEnv(env: Record<string, string | undefined>): Layer {
  const values: Layer = new Map();
  for (const [name, raw] of Object.entries(env)) {
    if (!name.startsWith('NOTIFICATIONS_') || raw === undefined || raw === '' || readElsewhere(name)) continue;
    if (!SETTINGS_BY_ENV.has(name)) throw unknownSetting(name, 'environment variable');
    values.set(name, { raw, source: '' });
  }
  return values;
}

function readConfigFile(path: string, namedBy: string, readFile: (path: string) => string): Layer {
  let text: string;
  try {
    text = readFile(path);
  } catch (error) {
    throw new ConfigError(namedBy, `cannot read the config file ${quote(path)}: ${error instanceof Error ? error.message : String(error)}`);
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    // V8 quotes the text around the mistake, which may hold a secret: keep the position only.
    const position = error instanceof Error ? /position (\d+)/.exec(error.message)?.[1] : undefined;
    throw new ConfigError(
      namedBy,
      `the config file ${quote(path)} is not valid JSON${position === undefined ? '' : ` (at character ${position})`}`,
    );
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    throw new ConfigError(
      namedBy,
      `the config file ${quote(path)} must hold a JSON object of settings, e.g. {"NOTIFICATIONS_PORT": "8080"}`,
    );
  }
  const where = `in config file ${quote(path)}`;
  const values: Layer = new Map();
  for (const [name, value] of Object.entries(data)) {
    if (!SETTINGS_BY_ENV.has(name)) throw unknownSetting(name, `key ${where}`);
    let raw: string;
    if (typeof value === 'string') raw = value;
    else if (typeof value === 'number' && Number.isFinite(value)) raw = String(value);
    else
      throw new ConfigError(
        name,
        `must be a string or a number ${where}, not ${value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value}`,
      );
    if (raw !== '') values.set(name, { raw, source: where });
  }
  return values;
}

function unknownSetting(name: string, what: string): ConfigError {
  const hint = suggestion(name, [...SETTINGS_BY_ENV.keys()]) || '; --help lists the settings';
  return new ConfigError(name, `unknown ${what}, not a setting${hint}`);
}

function showValue(setting: SettingInfo, raw: string): string {
  if (setting.sensitive === 'secret') return `the value (hidden, ${raw.length} characters)`;
  return quote(setting.sensitive === 'url' ? maskUrlPassword(raw) : raw);
}

function quote(text: string): string {
  const limit = 100;
  return JSON.stringify(text.length > limit ? `${text.slice(0, limit)}…` : text);
}

/** "; did you mean X?" for the closest candidate within 3 edits, else "". */
function suggestion(name: string, candidates: readonly string[]): string {
  let best: { candidate: string; distance: number } | undefined;
  for (const candidate of candidates) {
    const distance = editDistance(name, candidate);
    if (distance <= 3 && (best === undefined || distance < best.distance)) best = { candidate, distance };
  }
  return best === undefined ? '' : `; did you mean ${best.candidate}?`;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}

/** Freezes objects and arrays all the way down; Buffers stay as they are, since Node cannot freeze them. */
function deepFreeze<T extends object>(value: T): T {
  for (const child of Object.values(value) as unknown[]) {
    if (typeof child === 'object' && child !== null && !ArrayBuffer.isView(child)) deepFreeze(child);
  }
  return Object.freeze(value);
}
