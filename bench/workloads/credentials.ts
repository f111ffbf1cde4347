/**
 * The egress proxy's added latency per request with an injected credential (issue 41,
 * `BENCH_ONLY=credentials`). An HTTPS upstream (its own CA, made with openssl) and berth's proxy
 * (src/proxy/main.ts, configured as berth configures it, with one credential for the upstream)
 * each run in a child process on loopback; this process is the client. Every round, in
 * alternating order, BENCH_CRED_REQUESTS sequential requests (default 200), each on a fresh
 * connection, as an attempt makes them:
 *   - berth: a plain-HTTP GET through the proxy, which opens TLS to the upstream (verified against
 *     the CA), sets the header and relays the answer;
 *   - direct: the same GET as a TLS call of the client's own to the upstream (verified, the
 *     header set by the client): what the request costs without the proxy.
 * A round's value is the median request of each; the added latency is berth's minus direct.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import http from 'node:http';
import https from 'node:https';
import path from 'node:path';
import { makeTestCa } from '../../test/support/tls-ca';
import { REPO } from '../lib/proc';
import { summarize } from '../lib/stats';

export interface CredentialSamples {
  requests: number;
  /** Per round: the median request, through the proxy (ms). */
  berth: number[];
  /** Per round: the median request, a direct TLS call (ms). */
  direct: number[];
  /** Per round: berth's p95 and direct's p95 (ms). */
  berthP95: number[];
  directP95: number[];
}

const KEY = 'sk-bench-credential';

const ORIGIN_JS = `
require('https').createServer({ key: process.env.TLS_KEY, cert: process.env.TLS_CERT }, (q, s) => {
  if (q.headers.authorization !== 'Bearer ${KEY}') { s.writeHead(401); return s.end(); }
  s.end('{"ok":true}');
}).listen(0, '127.0.0.1', function () { console.log(JSON.stringify({ port: this.address().port })); });
`;

/** Starts `args` (node), resolves with its first stdout line parsed as JSON. */
function startChild(args: string[], env: NodeJS.ProcessEnv): Promise<{ child: ChildProcess; first: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { env, cwd: REPO, stdio: ['ignore', 'pipe', 'inherit'] });
    let buf = '';
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited ${code} before its first line`)));
    child.stdout?.on('data', (c: Buffer) => {
      buf += c.toString();
      const nl = buf.indexOf('\n');
      if (nl >= 0) {
        child.removeAllListeners('exit');
        resolve({ child, first: JSON.parse(buf.slice(0, nl)) as Record<string, unknown> });
      }
    });
  });
}

function timed(f: () => Promise<void>): Promise<number> {
  const t0 = performance.now();
  return f().then(() => performance.now() - t0);
}

function drain(req: http.ClientRequest): Promise<void> {
  return new Promise((resolve, reject) => {
    req.on('error', reject);
    req.on('response', (res) => {
      if (res.statusCode !== 200) reject(new Error(`status ${res.statusCode}`));
      res.resume();
      res.on('end', () => resolve());
    });
    req.end();
  });
}

export async function credentialRounds(rounds: number, requests: number, log: (m: string) => void): Promise<CredentialSamples> {
  const ca = makeTestCa([], ['127.0.0.1']);
  const origin = await startChild(['-e', ORIGIN_JS], { PATH: process.env.PATH, TLS_KEY: ca.key, TLS_CERT: ca.cert });
  const port = origin.first.port as number;
  const creds = [{ target: `127.0.0.1:${port}`, header: 'Authorization', value: `Bearer ${KEY}`, ca: ca.ca }];
  const proxy = await startChild(['--import', 'tsx', path.join('src', 'proxy', 'main.ts')], {
    PATH: process.env.PATH,
    BERTH_EGRESS_ALLOW: '',
    BERTH_PROXY_PORT: '0',
    BERTH_PROXY_LISTEN: '127.0.0.1',
    BERTH_PROXY_CREDENTIALS: JSON.stringify(creds),
  });
  // the decision lines go on coming: read and dropped
  proxy.child.stdout?.resume();
  const proxyPort = proxy.first.port as number;
  const viaProxy = () =>
    drain(http.request({ host: '127.0.0.1', port: proxyPort, path: 'http://127.0.0.1/v1/x', headers: { Host: '127.0.0.1' }, agent: false }));
  const direct = () => drain(https.request({ host: '127.0.0.1', port, path: '/v1/x', ca: ca.ca, headers: { Authorization: `Bearer ${KEY}` }, agent: false }));
  const out: CredentialSamples = { requests, berth: [], direct: [], berthP95: [], directP95: [] };
  try {
    // warm both paths (JIT, TLS session code) before measuring
    for (let i = 0; i < 20; i++) await Promise.all([viaProxy(), direct()]).then(() => undefined);
    for (let r = 0; r < rounds; r++) {
      const b: number[] = [];
      const d: number[] = [];
      for (let i = 0; i < requests; i++) {
        // alternate which goes first, request by request
        if ((i + r) % 2 === 0) {
          b.push(await timed(viaProxy));
          d.push(await timed(direct));
        } else {
          d.push(await timed(direct));
          b.push(await timed(viaProxy));
        }
      }
      const sb = summarize(b);
      const sd = summarize(d);
      out.berth.push(sb.median);
      out.direct.push(sd.median);
      out.berthP95.push(sb.p95);
      out.directP95.push(sd.p95);
      log(`credentials round ${r + 1}: through the proxy ${sb.median.toFixed(2)} ms, direct ${sd.median.toFixed(2)} ms (median of ${requests})`);
    }
  } finally {
    proxy.child.kill('SIGTERM');
    origin.child.kill('SIGTERM');
  }
  return out;
}
