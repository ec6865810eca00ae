/**
 * oauth2's client_secret and mtls's key are never shown again once written: a record shows
 * MASKED_SECRET in their place. A PUT that sends the record back as read carries the mask, and
 * it keeps the stored secret; a create, or a PUT where there is no such stored secret, is
 * refused. The client_secret is kept only while token_url and client_id stay as stored: the
 * secret is sent to the token endpoint, and a new endpoint is given it only by someone who knows it.
 */
import { serviceError } from '../errors.js';
import { type Auth, MASKED_SECRET } from './fields.js';
import { checkClientCertificate } from './mtls-input.js';

/** `auth` as a record shows it. */
export function maskedAuth(auth: Auth): Auth {
  if (!('type' in auth)) return auth;
  if (auth.type === 'oauth2') return { type: 'oauth2', oauth2: { ...auth.oauth2, client_secret: MASKED_SECRET } };
  if (auth.type === 'mtls') return { type: 'mtls', mtls: { ...auth.mtls, key: MASKED_SECRET } };
  return auth;
}

/** The member of `auth` that holds the mask rather than a secret (its field name), if any. */
export function maskedMember(auth: Auth): string | undefined {
  if (!('type' in auth)) return undefined;
  if (auth.type === 'oauth2' && auth.oauth2.client_secret === MASKED_SECRET) return 'body.auth.oauth2.client_secret';
  if (auth.type === 'mtls' && auth.mtls.key === MASKED_SECRET) return 'body.auth.mtls.key';
  return undefined;
}

/** A create has no stored secret for the mask to keep. */
export function refuseMask(auth: Auth): void {
  const member = maskedMember(auth);
  if (member !== undefined)
    throw serviceError('FIELD_INVALID', member, `is "${MASKED_SECRET}", which keeps a stored secret: send the secret itself`);
}

/** `sent` with the mask replaced by the secret of `stored`; 400 naming the member when there is none to keep. */
export function withStoredSecrets(sent: Auth, stored: Auth): Auth {
  const member = maskedMember(sent);
  if (member === undefined || !('type' in sent)) return sent;
  const nothingToKeep = (why: string) =>
    serviceError('FIELD_INVALID', member, `is "${MASKED_SECRET}", which keeps the stored secret, but ${why}: send the secret itself`);
  if (sent.type === 'oauth2') {
    if (!('type' in stored) || stored.type !== 'oauth2') throw nothingToKeep('the stored auth is not oauth2');
    if (stored.oauth2.token_url !== sent.oauth2.token_url || stored.oauth2.client_id !== sent.oauth2.client_id)
      throw nothingToKeep('token_url or client_id changed');
    return { type: 'oauth2', oauth2: { ...sent.oauth2, client_secret: stored.oauth2.client_secret } };
  }
  if (sent.type === 'mtls') {
    if (!('type' in stored) || stored.type !== 'mtls') throw nothingToKeep('the stored auth is not mtls');
    const restored = { type: 'mtls' as const, mtls: { ...sent.mtls, key: stored.mtls.key } };
    // A new certificate sent with the mask must still be the stored key's.
    checkClientCertificate(restored.mtls);
    return restored;
  }
  return sent;
}
