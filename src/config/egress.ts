// The egress proxy settings: NOTIFICATIONS_EGRESS_PROXY and NOTIFICATIONS_EGRESS_NO_PROXY, or,
// each when unset, the standard variables that other HTTP clients read (lower case first, as
// curl and undici read them). Those are not NOTIFICATIONS_ settings, so they are read here,
// after loadConfig, and a bad value of theirs is refused at start naming it as well.
import type { EgressSettings } from '../net/egress-proxy.js';
import { maskUrlPassword } from '../url-password.js';
import { ConfigError } from './load.js';
import type { Config } from './settings.js';
import { InvalidValue, listOf, parseNoProxyEntry, parseProxyUrl } from './values.js';

/** The first of `names` set (not empty) in `env`, with its value. */
function firstSet(env: Record<string, string | undefined>, names: readonly string[]): { name: string; raw: string } | null {
  for (const name of names) {
    const raw = env[name];
    if (raw !== undefined && raw.trim() !== '') return { name, raw: raw.trim() };
  }
  return null;
}

function standard<T>(env: Record<string, string | undefined>, names: readonly string[], parse: (raw: string) => T): T | null {
  const given = firstSet(env, names);
  if (given === null) return null;
  try {
    return parse(given.raw);
  } catch (error) {
    if (!(error instanceof InvalidValue)) throw error;
    throw new ConfigError(given.name, `${JSON.stringify(maskUrlPassword(given.raw))} ${error.reason}`);
  }
}

/**
 * Which proxy carries deliveries and policy calls: NOTIFICATIONS_EGRESS_PROXY for http and https
 * targets alike; when it is unset, https_proxy/HTTPS_PROXY for https targets and
 * http_proxy/HTTP_PROXY for http ones. NOTIFICATIONS_EGRESS_NO_PROXY, or no_proxy/NO_PROXY, names
 * the targets reached directly. Throws a ConfigError naming the standard variable that is wrong.
 */
export function egressSettings(config: Config, env: Record<string, string | undefined>): EgressSettings {
  const noProxy = config.egressNoProxy ?? standard(env, ['no_proxy', 'NO_PROXY'], listOf(parseNoProxyEntry)) ?? [];
  if (config.egressProxy !== null) return { httpProxy: config.egressProxy, httpsProxy: config.egressProxy, noProxy };
  return {
    httpProxy: standard(env, ['http_proxy', 'HTTP_PROXY'], parseProxyUrl),
    httpsProxy: standard(env, ['https_proxy', 'HTTPS_PROXY'], parseProxyUrl),
    noProxy,
  };
}

/** For the start-up log: where deliveries go, the proxies' passwords masked. */
export function describeEgress(egress: EgressSettings): Record<string, string | readonly string[]> {
  const shown = (proxy: string | null) => (proxy === null ? 'direct' : maskUrlPassword(proxy));
  return { http: shown(egress.httpProxy), https: shown(egress.httpsProxy), noProxy: egress.noProxy };
}
