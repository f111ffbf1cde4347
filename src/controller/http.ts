/**
 * The controller's HTTP endpoint (`--metrics-addr host:port`, off by default): the live fleet
 * report at / (src/report, made anew from the controller's memory at each request; the page
 * reloads itself every few seconds), Prometheus metrics at /metrics, liveness at /healthz, readiness at /readyz (ready once the lock is held,
 * a first pass over the specs succeeded, the engine answers and no disk is under pressure (new runs
 * wait Pending/DiskPressure: the body names the file system); when not, the body says why:
 * `not ready: the Docker engine at ... did not answer ...`). An engine that does not answer
 * makes the controller not ready, not dead: restarting berth does not heal an engine. Spec
 * errors do not make it not ready (it reconciles every other attempt, and what runs under a
 * broken spec keeps its last good one): /readyz stays 200 and its body lists each broken file
 * under `ok`, with its first error (`Probe.notes`).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseAddr } from '../util/addr';
import type { ControllerMetrics } from './metrics';

export interface Probe {
  healthy(): boolean;
  /** true, or false or the reason why not. */
  ready(): boolean | string | Promise<boolean | string>;
  /** Lines added to /readyz's body, ready or not (the spec errors). */
  notes?(): string[];
}

/** The page at `/`: its HTML, and the Content-Security-Policy it carries (sent as a header too). */
export type Page = () => Promise<{ html: string; csp: string }>;

export async function serve(
  addr: string,
  metrics: ControllerMetrics,
  probe: Probe,
  page?: Page,
): Promise<{ server: http.Server; url: string; close(): Promise<void> }> {
  const { host, port } = parseAddr(addr, '--metrics-addr', '127.0.0.1:9464');
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    if (path === '/' && page) {
      page().then(
        (p) =>
          res
            .writeHead(200, {
              'content-type': 'text/html; charset=utf-8',
              'content-security-policy': p.csp,
              'x-content-type-options': 'nosniff',
              'cache-control': 'no-store',
              'referrer-policy': 'no-referrer',
            })
            .end(req.method === 'HEAD' ? undefined : p.html),
        (err: unknown) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`report failed: ${(err as Error).message}\n`),
      );
    } else if (path === '/metrics') {
      metrics.registry.metrics().then(
        (body) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(body),
        (err: unknown) => res.writeHead(500).end(String(err)),
      );
    } else if (path === '/healthz') {
      const ok = probe.healthy();
      res.writeHead(ok ? 200 : 503, { 'content-type': 'text/plain' }).end(ok ? 'ok\n' : 'unhealthy\n');
    } else if (path === '/readyz') {
      Promise.resolve(probe.ready()).then(
        (ok) => {
          const notes = (probe.notes?.() ?? []).map((l) => `${l}\n`).join('');
          res.writeHead(ok === true ? 200 : 503, { 'content-type': 'text/plain' }).end(`${ok === true ? 'ok' : `not ready${ok ? `: ${ok}` : ''}`}\n${notes}`);
        },
        () => res.writeHead(503, { 'content-type': 'text/plain' }).end('not ready\n'),
      );
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const a = server.address() as AddressInfo;
  return {
    server,
    url: `http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
