/**
 * `git http-backend` (CGI) behind a small Node HTTP server on 127.0.0.1 with Basic auth: the
 * https token path of a git source, for real (over http on loopback). Records what it was asked.
 */
import { spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';

export class GitHttpServer {
  private server: http.Server | undefined;
  /** Requests seen: method, path, and whether their credentials were accepted. */
  readonly requests: { method: string; url: string; authorized: boolean }[] = [];

  constructor(
    /** The folder the repositories are in (GIT_PROJECT_ROOT). */
    readonly root: string,
    readonly user: string,
    readonly token: string,
  ) {}

  get port(): number {
    return (this.server?.address() as AddressInfo).port;
  }

  url(repoDir: string): string {
    return `http://127.0.0.1:${this.port}/${path.relative(this.root, repoDir)}`;
  }

  async start(): Promise<void> {
    const expected = `Basic ${Buffer.from(`${this.user}:${this.token}`).toString('base64')}`;
    this.server = http.createServer((req, res) => {
      const authorized = req.headers.authorization === expected;
      const u = new URL(req.url ?? '/', 'http://127.0.0.1');
      this.requests.push({ method: req.method ?? '', url: u.pathname, authorized });
      if (!authorized) {
        req.resume();
        res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="berth-test"' }).end('unauthorized\n');
        return;
      }
      const child = spawn('git', ['http-backend'], {
        env: {
          PATH: process.env['PATH'] ?? '/usr/bin:/bin',
          HOME: os.tmpdir(),
          GIT_CONFIG_NOSYSTEM: '1',
          GIT_CONFIG_GLOBAL: '/dev/null',
          GIT_PROJECT_ROOT: this.root,
          GIT_HTTP_EXPORT_ALL: '1',
          PATH_INFO: u.pathname,
          QUERY_STRING: u.search.slice(1),
          REQUEST_METHOD: req.method ?? 'GET',
          CONTENT_TYPE: req.headers['content-type'] ?? '',
          REMOTE_USER: this.user,
          REMOTE_ADDR: '127.0.0.1',
          ...(req.headers['content-encoding'] ? { HTTP_CONTENT_ENCODING: String(req.headers['content-encoding']) } : {}),
          ...(req.headers['git-protocol'] ? { GIT_PROTOCOL: String(req.headers['git-protocol']) } : {}),
        },
        stdio: ['pipe', 'pipe', 'ignore'],
      });
      req.pipe(child.stdin);
      let head = Buffer.alloc(0);
      let started = false;
      child.stdout.on('data', (chunk: Buffer) => {
        if (started) {
          res.write(chunk);
          return;
        }
        head = Buffer.concat([head, chunk]);
        const end = head.indexOf('\r\n\r\n');
        if (end < 0) return;
        started = true;
        let status = 200;
        const headers: Record<string, string> = {};
        for (const line of head.subarray(0, end).toString('latin1').split('\r\n')) {
          const i = line.indexOf(':');
          const k = line.slice(0, i).trim();
          const v = line.slice(i + 1).trim();
          if (k.toLowerCase() === 'status') status = Number(v.split(' ')[0]);
          else headers[k] = v;
        }
        res.writeHead(status, headers);
        res.write(head.subarray(end + 4));
      });
      child.on('close', () => {
        if (!started) res.writeHead(500).end();
        else res.end();
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', () => resolve()));
  }

  async stop(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }
}
