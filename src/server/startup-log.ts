/** What the server says once at start: its settings, and those that leave it open. */
import type { FastifyBaseLogger } from 'fastify';
import { describeEgress } from '../config/egress.js';
import { type Config, redactedConfig } from '../config/settings.js';
import type { EgressSettings } from '../net/egress-proxy.js';
import { listensOnLoopbackOnly } from '../net/peer-list.js';
import { policyModeOf } from './program.js';

export function logStartup(config: Config, egress: EgressSettings, log: FastifyBaseLogger): void {
  log.info({ config: redactedConfig(config) }, 'configuration');
  if (egress.httpProxy !== null || egress.httpsProxy !== null) {
    log.info({ egress: describeEgress(egress) }, 'deliveries and policy calls go through the egress proxy, except to NO_PROXY targets');
  }
  if (policyModeOf(config) === 'allow-all') {
    log.warn('allow-all mode: NOTIFICATIONS_POLICY_URL is not set, so every subscriber receives every event its subscriptions match');
  }
  if (!listensOnLoopbackOnly(config.address) && config.receiveToken === null && config.receiveAllow === null) {
    log.warn(
      `open /receive: listening on ${config.address}, beyond loopback, with neither NOTIFICATIONS_RECEIVE_TOKEN nor NOTIFICATIONS_RECEIVE_ALLOW set, so any peer that reaches this port can post events`,
    );
  }
}
