/** The HTTP API and the web console: the app with its routes, started by listening. */
import { buildApp } from '../api/app.js';
import { deliveriesRoutes } from '../api/deliveries-routes.js';
import { eventmatchRoutes } from '../api/eventmatch-routes.js';
import { eventsRoutes } from '../api/pull-events-routes.js';
import { healthRoutes } from '../api/health.js';
import { metricsRoutes } from '../api/metrics-routes.js';
import { receiveRoutes } from '../api/receive-routes.js';
import { loadConsoleAssets } from '../console/assets.js';
import { consoleRoutes } from '../console/routes.js';
import type { ExpectedNotifications } from '../db/expected-notifications.js';
import type { SubscriptionChange } from '../db/stores/subscriptions.js';
import { EventLogBatch } from '../receive/event-log-batch.js';
import { addressGuard } from '../net/address-guard.js';
import type { EgressSettings } from '../net/egress-proxy.js';
import { peerList } from '../net/peer-list.js';
import { packageInfo } from '../package-info.js';
import type { SharedReads } from '../pull/shared-reads.js';
import type { PullWaiters } from '../pull/waiters.js';
import { targetConsent } from '../subscriptions/target-consent.js';
import type { Tracing } from '../tracing/tracing.js';
import type { ServerBase } from './base.js';
import type { Part } from './lifecycle.js';
import { originOf, policyModeOf } from './program.js';
import type { Runners } from './runners.js';

export interface HttpOptions extends ServerBase {
  /** The egress proxy, which the consent handshake goes through as deliveries do. */
  egress: EgressSettings;
  tracing: Tracing | undefined;
  runners: Runners;
  holder: string;
  waiters: PullWaiters;
  pullReads: SharedReads;
  /** Where each subscription write made here goes (followSubscriptionWrites). */
  onChange: (change: SubscriptionChange) => void;
  /** Given where instances share the database: this instance's creates, applied already. */
  expected: ExpectedNotifications | undefined;
}

/** Listening failed: the address is taken, or not this host's. */
export class CannotListen extends Error {}

export async function buildHttp(options: HttpOptions): Promise<Part> {
  const { config, log, database, clock, metrics, matcher, tracing, runners, holder, waiters, pullReads, expected } = options;
  const { deliveries, policy } = runners;
  const origin = originOf(config);
  const targetGuard = addressGuard({ allow: config.targetAllow, deny: config.targetDeny });
  const trustedProxies = peerList(config.trustedProxies);
  const identity = { header: config.userHeader, defaultUser: config.defaultUser, trustedProxies };
  const app = await buildApp(
    {
      maxBodyBytes: config.maxBodyBytes,
      logger: log,
      logRequests: config.logRequests,
      version: packageInfo().version,
      databaseTimeoutMs: config.databaseTimeoutMs,
      metrics,
      trustedProxies,
    },
    [
      healthRoutes({ database, policyMode: policyModeOf(config) }),
      metricsRoutes({ registry: metrics.registry }),
      eventmatchRoutes({
        database,
        clock,
        secretKey: config.secretKey,
        dialectMode: config.jsonpathDialect,
        userSubscriptions: config.userSubscriptions,
        targetGuard,
        ...(config.targetValidation === 'handshake'
          ? { targetConsent: targetConsent({ origin, timeoutMs: config.targetTimeoutMs, guard: targetGuard, egress: options.egress }) }
          : {}),
        identity,
        onChange: options.onChange,
        ...(expected ? { expectedNotifications: expected } : {}),
        notices: runners.notices,
        onNotified: deliveries.wake,
      }),
      // A delivery queued again goes through the policy check first: that runner looks now.
      deliveriesRoutes({ database, identity, clock, onRequeued: policy.wake }),
      eventsRoutes({
        reader: pullReads,
        waiters,
        identity,
      }),
      receiveRoutes({
        eventLog: new EventLogBatch(database),
        matcher,
        clock,
        handoff: { to: runners.toPolicy, holder, leaseUs: config.leaseMs * 1000 },
        receiveToken: config.receiveToken,
        receiveAllow: config.receiveAllow === null ? null : peerList(config.receiveAllow),
        onReceived: policy.wake,
        metrics,
        tracing,
      }),
      consoleRoutes({ assets: consoleAssets() }),
    ],
  );
  return {
    name: 'HTTP',
    start: async () => {
      try {
        await app.listen({ host: config.address, port: config.port });
      } catch (error) {
        throw new CannotListen(
          `cannot listen on ${config.address}:${config.port}: ${error instanceof Error ? error.message : String(error)}`,
          { cause: error },
        );
      }
    },
    stop: async () => {
      await app.close();
    },
  };
}

/** The web console's files; or, when they cannot be read, why (the API is served without it). */
function consoleAssets(): ReturnType<typeof loadConsoleAssets> | Error {
  try {
    return loadConsoleAssets();
  } catch (error) {
    return error instanceof Error ? error : new Error(String(error));
  }
}
