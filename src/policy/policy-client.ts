import { STATUS_CODES } from 'node:http';
import { type EgressSettings, NO_EGRESS_PROXY } from '../net/egress-proxy.js';
import { ExchangeDeadline } from '../net/exchange-deadline.js';
import { describeNetworkError } from '../net/network-error.js';
import { outboundDispatchers } from '../net/outbound-dispatcher.js';

/**
 * The policy service's word on one (event, user). `deny` is a result, not an
 * error: the match is recorded and never delivered. `retry` means no word yet.
 */
export type PolicyAnswer =
  { kind: 'allow'; status: number } | { kind: 'deny'; status: number } | { kind: 'retry'; status: number | null; error: string };

export interface PolicyClient {
  /**
   * Never rejects for network problems: they come back as `retry`. `event`: the event's JSON
   * as the log keeps it, sent as it is. `traceparent`: sent as the header of that name.
   */
  ask(user: string, event: string, traceparent?: string): Promise<PolicyAnswer>;
  close(): Promise<void>;
}

export interface PolicyClientOptions {
  /** NOTIFICATIONS_POLICY_URL; operator-configured, so no address guard. */
  readonly baseUrl: string;
  /** Covers the whole exchange, like a target's. */
  readonly timeoutMs: number;
  /** The egress proxy, as for targets (NO_PROXY included); none unless given. */
  readonly egress?: EgressSettings;
}

const JSON_BODY = { 'content-type': 'application/json' };

/** The policy code recorded in allow-all mode. */
const ALLOW_ALL_STATUS = 200;

/** For when no policy URL is configured: every user may see every event. */
export const allowAll: PolicyClient = Object.freeze({
  ask: () => Promise.resolve<PolicyAnswer>({ kind: 'allow', status: ALLOW_ALL_STATUS }),
  close: () => Promise.resolve(),
});

/** Pacifica Policy protocol: POST {baseUrl}/events/{user} with the event JSON. */
export function createPolicyClient(options: PolicyClientOptions): PolicyClient {
  const { timeoutMs } = options;
  const base = new URL(options.baseUrl);
  const basePath = base.pathname.replace(/\/+$/, '');
  const dispatchers = outboundDispatchers({ timeoutMs, guard: null, egress: options.egress ?? NO_EGRESS_PROXY });
  const pool = dispatchers.outboundDispatcher({ origin: base.origin });

  async function ask(user: string, event: string, traceparent?: string): Promise<PolicyAnswer> {
    const deadline = new ExchangeDeadline(timeoutMs);
    try {
      const response = await pool.request({
        method: 'POST',
        path: `${basePath}/events/${encodeURIComponent(user)}`,
        headers: traceparent === undefined ? JSON_BODY : { ...JSON_BODY, traceparent },
        body: event,
        signal: deadline.signal,
      });
      // Only the status matters. The body is read off (dump never rejects) so the
      // connection is reused; a failure while reading it cannot change the answer.
      await response.body.dump();
      return answerFor(response.statusCode);
    } catch (error) {
      return { kind: 'retry', status: null, error: describeNetworkError(deadline.cause(error)).message };
    } finally {
      deadline.clear();
    }
  }

  return { ask, close: () => pool.close().then(() => dispatchers.close()) };
}

function answerFor(status: number): PolicyAnswer {
  if (status >= 200 && status <= 299) return { kind: 'allow', status };
  if (status >= 400 && status <= 499) return { kind: 'deny', status };
  // 5xx, and anything else (a redirect is not followed): no decision, so ask again
  // later rather than show or hide the event on a guess.
  const phrase = STATUS_CODES[status];
  const note = status >= 300 && status <= 399 ? ' (redirects are not followed)' : '';
  return { kind: 'retry', status, error: `policy service answered ${status}${phrase === undefined ? '' : ` ${phrase}`}${note}` };
}
