/**
 * The OAuth 2.0 access tokens deliveries send, kept in the outbound thread: one per set of client
 * credentials (token_url, client_id, client_secret, scope, audience), so that subscriptions with
 * the same client share it. A token is fetched when there is none fresh, by one request however
 * many deliveries wait for it (single flight), and kept until TOKEN_RENEWAL_MARGIN_MS before
 * its expires_in runs out (a token living less than twice that, until half its life); one
 * without expires_in is kept TOKEN_DEFAULT_LIFETIME_MS. A target's 401 to a token renews it,
 * once for all the deliveries that saw that token refused.
 */
import { createHash } from 'node:crypto';
import type { ClientCredentials, IssuedToken, TokenEndpointClient } from '../net/oauth2-token-endpoint.js';
import { RecentlyUsed } from '../recently-used.js';

export const TOKEN_RENEWAL_MARGIN_MS = 30_000;
export const TOKEN_DEFAULT_LIFETIME_MS = 5 * 60_000;
/** Sets of credentials whose tokens are kept; past it the one first asked for longest ago is dropped. */
const MAX_KEPT = 10_000;

export interface TokenSource {
  /** A fresh token for `credentials`; rejects with the endpoint's TokenEndpointError. */
  current(credentials: ClientCredentials): Promise<string>;
  /** A token other than `refused`, which a target answered 401: fetched unless another delivery has already renewed it. */
  renewed(credentials: ClientCredentials, refused: string): Promise<string>;
  /** Drops `refused` without fetching another now: the next `current` fetches one. */
  forget(credentials: ClientCredentials, refused: string): void;
  close(): Promise<void>;
}

interface Kept {
  token?: string;
  freshUntil: number;
  pending?: Promise<string>;
}

export function tokenSource(endpoint: TokenEndpointClient, now: () => number = Date.now): TokenSource {
  const kept = new RecentlyUsed<string, Kept>(MAX_KEPT);

  function entryOf(credentials: ClientCredentials): Kept {
    // Hashed: the map holds no second copy of the secret in its keys.
    const key = createHash('sha256')
      .update(
        JSON.stringify([
          credentials.token_url,
          credentials.client_id,
          credentials.client_secret,
          credentials.scope ?? null,
          credentials.audience ?? null,
        ]),
      )
      .digest('base64url');
    let entry = kept.get(key);
    if (entry === undefined) kept.set(key, (entry = { freshUntil: 0 }));
    return entry;
  }

  function fetchInto(entry: Kept, credentials: ClientCredentials): Promise<string> {
    const asked = now();
    const pending = endpoint.requestToken(credentials).then(
      (issued) => {
        entry.token = issued.accessToken;
        entry.freshUntil = asked + keptFor(issued);
        entry.pending = undefined;
        return issued.accessToken;
      },
      (error: unknown) => {
        entry.pending = undefined;
        throw error;
      },
    );
    entry.pending = pending;
    return pending;
  }

  return {
    current(credentials) {
      const entry = entryOf(credentials);
      if (entry.pending !== undefined) return entry.pending;
      if (entry.token !== undefined && now() < entry.freshUntil) return Promise.resolve(entry.token);
      return fetchInto(entry, credentials);
    },
    renewed(credentials, refused) {
      const entry = entryOf(credentials);
      if (entry.pending !== undefined) return entry.pending;
      if (entry.token !== undefined && entry.token !== refused && now() < entry.freshUntil) return Promise.resolve(entry.token);
      return fetchInto(entry, credentials);
    },
    forget(credentials, refused) {
      const entry = entryOf(credentials);
      if (entry.token === refused) entry.freshUntil = 0;
    },
    close: () => endpoint.close(),
  };
}

/** How long a token is used: up to the renewal margin before it expires, or half its life when that is short. */
export function keptFor(issued: IssuedToken): number {
  const lifetime = issued.lifetimeMs ?? TOKEN_DEFAULT_LIFETIME_MS;
  return lifetime - Math.min(TOKEN_RENEWAL_MARGIN_MS, lifetime / 2);
}
