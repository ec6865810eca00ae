/**
 * The TLS a connection to one target presents (a client certificate: mutual TLS) and trusts
 * besides the default roots. Node's `ca` replaces the roots it trusts; a target's `ca` adds to
 * them, so it is given together with Node's default roots (the bundled ones, and
 * NODE_EXTRA_CA_CERTS).
 */
import { createHash } from 'node:crypto';
import { getCACertificates } from 'node:tls';

/** PEM texts: the certificate (with its chain), its private key, and roots trusted besides the default ones. */
export interface ClientTls {
  readonly cert?: string;
  readonly key?: string;
  readonly ca?: string;
}

export interface TlsConnectOptions {
  readonly cert?: string;
  readonly key?: string;
  readonly ca?: string[];
}

/** The TLS options of a connection presenting `tls` (for undici's `connect`, or tls.connect). */
export function tlsConnectOptions(tls: ClientTls | undefined): TlsConnectOptions {
  if (tls === undefined) return {};
  return {
    ...(tls.cert === undefined ? {} : { cert: tls.cert }),
    ...(tls.key === undefined ? {} : { key: tls.key }),
    ...(tls.ca === undefined ? {} : { ca: [...getCACertificates('default'), tls.ca] }),
  };
}

/**
 * Stands for `tls` wherever connections are told apart by it ('' for none): two targets share
 * connections only if they present the same. The key cannot be read back from it.
 */
export function tlsIdentity(tls: ClientTls | undefined): string {
  if (tls === undefined || (tls.cert === undefined && tls.key === undefined && tls.ca === undefined)) return '';
  return createHash('sha256')
    .update(JSON.stringify([tls.cert ?? null, tls.key ?? null, tls.ca ?? null]))
    .digest('base64url');
}
