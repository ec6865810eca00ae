import type { Auth } from './input.js';

/**
 * The Authorization header value for `auth`, or undefined when there is none: sent on every
 * delivery, and on the consent handshake, which a target behind credentials answers only with
 * them. oauth2's is its access token's, which the caller has obtained (`token`); mtls has none:
 * its certificate is presented in the TLS handshake.
 */
export function authorizationHeader(auth: Auth, token?: string): string | undefined {
  if (!('type' in auth)) return undefined;
  switch (auth.type) {
    case 'basic': {
      const { username, password } = auth.basic;
      return `Basic ${Buffer.from(`${username}:${password}`, 'utf8').toString('base64')}`;
    }
    case 'header':
      return `${auth.header.type} ${auth.header.credentials}`;
    case 'oauth2':
      if (token === undefined) throw new Error('an oauth2 Authorization header needs the access token');
      return `Bearer ${token}`;
    case 'mtls':
      return undefined;
  }
}
