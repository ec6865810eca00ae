import type { Auth } from './input.js';

/**
 * The Authorization header value for `auth`, or undefined when there is none: sent on every
 * delivery, and on the consent handshake, which a target behind credentials answers only with them.
 */
export function authorizationHeader(auth: Auth): string | undefined {
  if (!('type' in auth)) return undefined;
  if (auth.type === 'basic') {
    const { username, password } = auth.basic;
    return `Basic ${Buffer.from(`${username}:${password}`, 'utf8').toString('base64')}`;
  }
  return `${auth.header.type} ${auth.header.credentials}`;
}
