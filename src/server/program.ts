import { hostname } from 'node:os';
import type { Config } from '../config/settings.js';

/** The server's name, in its messages and in how its database connections name themselves. */
export const PROGRAM = 'svc-notifications';

/** How this server names itself to targets: NOTIFICATIONS_ORIGIN, or the host's name. */
export function originOf(config: Config): string {
  return config.origin ?? hostname();
}

/** How the server asks whether a subscriber may receive an event. */
export function policyModeOf(config: Config): 'policy-service' | 'allow-all' {
  return config.policyUrl ? 'policy-service' : 'allow-all';
}
