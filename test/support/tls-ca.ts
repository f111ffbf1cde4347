/**
 * A certificate authority of the test's own, made with the openssl command line in a temp folder:
 * its certificate, and a server key and certificate it signed for the given DNS names and IPv4
 * addresses. Nothing here is trusted by the system: a client verifies with `ca` or fails.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface TestCa {
  /** PEM of the CA's certificate. */
  readonly ca: string;
  /** PEM of the server's key and certificate (signed by the CA). */
  readonly key: string;
  readonly cert: string;
}

export function makeTestCa(names: readonly string[], ips: readonly string[] = []): TestCa {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-ca-'));
  try {
    const at = (f: string): string => path.join(dir, f);
    const ssl = (...args: string[]): void => {
      execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
    };
    ssl(
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
      '/CN=berth test CA',
      '-keyout',
      at('ca.key'),
      '-out',
      at('ca.pem'),
    );
    ssl(
      'req',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-subj',
      `/CN=${names[0] ?? ips[0] ?? 'server'}`,
      '-keyout',
      at('server.key'),
      '-out',
      at('server.csr'),
    );
    const san = [...names.map((n) => `DNS:${n}`), ...ips.map((ip) => `IP:${ip}`)].join(',');
    fs.writeFileSync(at('ext.cnf'), `subjectAltName=${san}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n`);
    ssl(
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
      at('ext.cnf'),
      '-out',
      at('server.pem'),
    );
    return { ca: fs.readFileSync(at('ca.pem'), 'utf8'), key: fs.readFileSync(at('server.key'), 'utf8'), cert: fs.readFileSync(at('server.pem'), 'utf8') };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
