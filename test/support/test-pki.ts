/**
 * Certificates for TLS tests, made with `openssl` in a temporary directory: a CA; a server
 * certificate it signs, for `serverNames` (IP addresses or DNS names; 127.0.0.1 by default); a
 * client certificate it signs; and another client key, for a key that does not match. The CA is
 * also kept in a file (`caFile`, for NODE_EXTRA_CA_CERTS of a server process) until `remove()`.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestPki {
  readonly caCert: string;
  /** `caCert` as a file. */
  readonly caFile: string;
  readonly serverCert: string;
  readonly serverKey: string;
  readonly clientCert: string;
  readonly clientKey: string;
  /** A key of another pair: it does not match clientCert. */
  readonly otherKey: string;
  /** The subject common name of clientCert. */
  readonly clientName: string;
  /** Removes `caFile`. */
  remove(): void;
}

export const CLIENT_NAME = 'pipeline-client';

export function makeTestPki(serverNames: readonly string[] = ['127.0.0.1']): TestPki {
  const dir = mkdtempSync(join(tmpdir(), 'notifications-pki-'));
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  const read = (name: string) => readFileSync(join(dir, name), 'utf8');
  try {
    const key = (name: string) => openssl('genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', name);
    key('ca.key');
    openssl('req', '-x509', '-new', '-key', 'ca.key', '-subj', '/CN=Notifications Test CA', '-days', '2', '-out', 'ca.pem');
    const signed = (name: string, subject: string, extensions: string) => {
      key(`${name}.key`);
      openssl('req', '-new', '-key', `${name}.key`, '-subj', subject, '-out', `${name}.csr`);
      writeFileSync(join(dir, `${name}.ext`), extensions);
      openssl(
        'x509',
        '-req',
        '-in',
        `${name}.csr`,
        '-CA',
        'ca.pem',
        '-CAkey',
        'ca.key',
        '-CAcreateserial',
        '-days',
        '2',
        '-extfile',
        `${name}.ext`,
        '-out',
        `${name}.pem`,
      );
    };
    const alternativeNames = serverNames.map((name) => `${isIP(name) === 0 ? 'DNS' : 'IP'}:${name}`).join(',');
    signed('server', `/CN=${serverNames[0]}`, `subjectAltName=${alternativeNames}\nextendedKeyUsage=serverAuth\n`);
    signed('client', `/CN=${CLIENT_NAME}`, 'extendedKeyUsage=clientAuth\n');
    key('other.key');
    const caDir = mkdtempSync(join(tmpdir(), 'notifications-ca-'));
    const caFile = join(caDir, 'ca.pem');
    writeFileSync(caFile, read('ca.pem'));
    return {
      caCert: read('ca.pem'),
      caFile,
      serverCert: read('server.pem'),
      serverKey: read('server.key'),
      clientCert: read('client.pem'),
      clientKey: read('client.key'),
      otherKey: read('other.key'),
      clientName: CLIENT_NAME,
      remove: () => rmSync(caDir, { recursive: true, force: true }),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
