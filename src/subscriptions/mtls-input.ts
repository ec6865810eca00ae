/**
 * `auth` `mtls` as a client sends it: PEM texts that node:crypto must read as they will be used
 * when connecting (a certificate chain, an unencrypted private key of the first certificate, and
 * trusted roots), so that a broken one is a 400 naming its field now, not a TLS failure at
 * every delivery. Messages never quote the key.
 */
import { createPrivateKey, type KeyObject, X509Certificate } from 'node:crypto';
import { serviceError } from '../errors.js';
import { type ClientCertificate, MASKED_SECRET } from './fields.js';

export type SentMtls = Partial<Record<keyof ClientCertificate, string>>;

const FIELD = 'body.auth.mtls';
const CERTIFICATE_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

/** The members there, and each as it must be; a key sent back as the mask is checked once restored (masked-secrets.ts). */
export function validateMtls(sent: SentMtls): ClientCertificate {
  for (const name of ['cert', 'key'] as const) if (sent[name] === undefined) throw serviceError('FIELD_REQUIRED', `${FIELD}.${name}`);
  const mtls: ClientCertificate = { cert: sent.cert!, key: sent.key! };
  if (sent.ca !== undefined) mtls.ca = sent.ca;
  checkClientCertificate(mtls);
  return mtls;
}

export function checkClientCertificate(mtls: ClientCertificate): void {
  const [leaf] = certificates(mtls.cert, 'cert');
  if (mtls.ca !== undefined) certificates(mtls.ca, 'ca');
  if (mtls.key === MASKED_SECRET) return;
  const key = privateKey(mtls.key);
  if (!leaf!.checkPrivateKey(key))
    throw serviceError('FIELD_INVALID', `${FIELD}.key`, `does not match the certificate of ${FIELD}.cert (its public key is another)`);
}

/** Each certificate of a PEM text, in order: at least one, and nothing else in it. */
function certificates(pem: string, name: 'cert' | 'ca'): X509Certificate[] {
  const field = `${FIELD}.${name}`;
  const blocks = pem.match(CERTIFICATE_BLOCK) ?? [];
  if (blocks.length === 0) throw serviceError('FIELD_INVALID', field, 'must hold a PEM certificate (-----BEGIN CERTIFICATE-----)');
  if (pem.replace(CERTIFICATE_BLOCK, '').trim() !== '')
    throw serviceError('FIELD_INVALID', field, 'must hold PEM certificates only, nothing around or between them');
  return blocks.map((block, index) => {
    try {
      return new X509Certificate(block);
    } catch {
      throw serviceError('FIELD_INVALID', field, `certificate ${index + 1} does not parse as X.509`);
    }
  });
}

function privateKey(pem: string): KeyObject {
  const field = `${FIELD}.key`;
  // Nobody would be there to give a passphrase when connecting.
  if (/-----BEGIN ENCRYPTED PRIVATE KEY-----|Proc-Type: 4,ENCRYPTED/.test(pem))
    throw serviceError('FIELD_INVALID', field, 'must not be encrypted (no passphrase can be given)');
  if (!/-----BEGIN (?:RSA |EC )?PRIVATE KEY-----/.test(pem))
    throw serviceError('FIELD_INVALID', field, 'must be a PEM private key (-----BEGIN PRIVATE KEY-----)');
  try {
    return createPrivateKey({ key: pem, format: 'pem' });
  } catch {
    // Node's message may quote the key: only what kind of failure it is is said.
    throw serviceError('FIELD_INVALID', field, 'does not parse as a PEM private key');
  }
}
