/**
 * Reading a push subscription's target URL by its kind (kinds.ts): an HTTP URL here, a broker's
 * by its protocol's rules (brokers/broker-url.ts). Spaces, control characters and the length are
 * the subscription checks' (subscriptions/input.ts), which call this for the rest.
 */
import { type BrokerUrl, readBrokerUrl } from '../brokers/broker-url.js';
import { BrokerUrlError } from '../brokers/protocol.js';
import { BROKER_KINDS, kindOfScheme, list, TARGET_SCHEMES, WEBHOOK } from './kinds.js';

/** What is wrong with a target URL (for `body.target_url: …`); undefined when it can be delivered to. */
export function targetUrlProblem(text: string): string | undefined {
  const kind = kindOfScheme(text);
  if (kind?.protocol !== undefined) {
    try {
      readBrokerUrl(text, kind.protocol);
      return undefined;
    } catch (error) {
      if (error instanceof BrokerUrlError) return error.message;
      throw error;
    }
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return ABSOLUTE;
  }
  if (kind === undefined) return `must be an ${list(TARGET_SCHEMES, 'or')} URL, not ${url.protocol.slice(0, -1)}`;
  // `http:host` parses as http://host/: stored as written, it would not say where deliveries go.
  if (!/^[^:]+:\/\/[^/]/.test(text)) return ABSOLUTE;
  // Stored and echoed in clear text (only `auth` is sealed), and logged wherever the URL is.
  if (url.username !== '' || url.password !== '') return 'must not contain credentials; put them in auth';
  return undefined;
}

const ABSOLUTE = `must be an absolute ${list(WEBHOOK.schemes, 'or')} URL, e.g. https://example.org/events`;

/** A broker target URL, read by its protocol; throws BrokerUrlError saying what is wrong. */
export function readBrokerTarget(text: string): BrokerUrl {
  const protocol = kindOfScheme(text)?.protocol;
  if (protocol === undefined) throw new BrokerUrlError(`must be a broker URL (${BROKER_KINDS.map((kind) => kind.id).join(', ')})`);
  return readBrokerUrl(text, protocol);
}
