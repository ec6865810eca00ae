/**
 * A certificate authority and a server certificate for `names`, made by `openssl` in a temporary
 * directory, for real HTTPS targets in tests: trust `ca` (PEM) to reach a server using `key` and
 * `cert`. `caFile` is for NODE_EXTRA_CA_CERTS of a server process.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestCertificates {
  readonly ca: string;
  readonly caFile: string;
  readonly key: string;
  readonly cert: string;
  remove(): void;
}

export function makeTestCertificates(names: readonly string[]): TestCertificates {
  const dir = mkdtempSync(join(tmpdir(), 'svc-notifications-tls-'));
  const at = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });
  openssl(
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-days',
    '2',
    '-subj',
    '/CN=svc-notifications test CA',
    '-keyout',
    at('ca.key'),
    '-out',
    at('ca.pem'),
  );
  writeFileSync(at('server.ext'), `subjectAltName=${names.map((name) => `DNS:${name}`).join(',')}\n`);
  openssl(
    'req',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-subj',
    `/CN=${names[0] ?? 'localhost'}`,
    '-keyout',
    at('server.key'),
    '-out',
    at('server.csr'),
  );
  openssl(
    'x509',
    '-req',
    '-in',
    at('server.csr'),
    '-CA',
    at('ca.pem'),
    '-CAkey',
    at('ca.key'),
    '-CAcreateserial',
    '-days',
    '2',
    '-extfile',
    at('server.ext'),
    '-out',
    at('server.pem'),
  );
  return {
    ca: readFileSync(at('ca.pem'), 'utf8'),
    caFile: at('ca.pem'),
    key: readFileSync(at('server.key'), 'utf8'),
    cert: readFileSync(at('server.pem'), 'utf8'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
