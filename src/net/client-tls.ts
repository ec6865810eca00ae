/**
 * A client certificate presented when connecting over TLS (mutual TLS), and the roots trusted for
 * that connection. Node's `ca` replaces the roots it trusts; a subscription's `ca` adds to them,
 * so it is given together with Node's default roots (the bundled ones, and NODE_EXTRA_CA_CERTS).
 */
import { createHash } from 'node:crypto';
import { getCACertificates } from 'node:tls';

/** PEM texts: the certificate (chain), its private key, and roots trusted besides the default ones. */
export interface ClientTls {
  readonly cert: string;
  readonly key: string;
  readonly ca?: string;
}

export interface TlsConnectOptions {
  readonly cert: string;
  readonly key: string;
  readonly ca?: string[];
}

/** The TLS options of a connection presenting `tls` (for undici's `connect`, or tls.connect). */
export function tlsConnectOptions(tls: ClientTls): TlsConnectOptions {
  return { cert: tls.cert, key: tls.key, ...(tls.ca === undefined ? {} : { ca: [...getCACertificates('default'), tls.ca] }) };
}

/** Stands for `tls` wherever connections are told apart by it; the key cannot be read back from it. */
export function tlsIdentity(tls: ClientTls): string {
  return createHash('sha256')
    .update(JSON.stringify([tls.cert, tls.key, tls.ca ?? null]))
    .digest('base64url');
}
