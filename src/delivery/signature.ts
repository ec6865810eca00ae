/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com/): each delivery attempt
 * carries `webhook-id`, `webhook-timestamp` (Unix seconds of this attempt) and
 * `webhook-signature`, a space-separated list of `v1,<base64 HMAC-SHA256>` over
 * `<id>.<timestamp>.<body>`, one per secret that signs (two during a rotation's overlap).
 */
import { createHmac } from 'node:crypto';

export interface Signing {
  /** The delivery's ELM uuid: the same on every attempt, so a receiver can drop repeats. */
  readonly id: string;
  /** `whsec_…` secrets, newest first. */
  readonly secrets: readonly string[];
}

export interface SignatureHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

const PREFIX = 'whsec_';

export function signatureHeaders(signing: Signing, timestampSeconds: number, body: string): SignatureHeaders {
  const timestamp = String(timestampSeconds);
  const signed = `${signing.id}.${timestamp}.${body}`;
  const signatures = signing.secrets.map((secret) => `v1,${createHmac('sha256', keyOf(secret)).update(signed, 'utf8').digest('base64')}`);
  return { 'webhook-id': signing.id, 'webhook-timestamp': timestamp, 'webhook-signature': signatures.join(' ') };
}

// Decoding 32 bytes of base64 costs less than looking it up in a cache would.
function keyOf(secret: string): Buffer {
  return Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64');
}
