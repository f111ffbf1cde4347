/**
 * Sick engines for tests, each on a unix socket in a temp folder of its own (loopback only):
 * - `silent`: accepts connections and never answers;
 * - `ping-only`: answers `/_ping` and nothing else;
 * - `proxy`: forwards every request to a real engine's socket, unless told to stop answering
 *   (`hangAll`: every new request; `hangEvents`: the event stream only). A request it does not
 *   answer stays open, unanswered, until the test closes the server.
 */
import http from 'node:http';
import net from 'node:net';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export type SickMode = 'silent' | 'ping-only' | { proxyTo: string };

export class SickEngine {
  hangAll = false;
  hangEvents = false;
  /** Requests (or, when silent, connections) left unanswered so far. */
  unanswered = 0;
  /** The paths of the requests left unanswered, in order (not when silent). */
  readonly unansweredPaths: string[] = [];
  private readonly sockets = new Set<net.Socket>();

  private constructor(
    readonly dir: string,
    readonly socket: string,
    private readonly server: net.Server,
  ) {
    server.on('connection', (s: net.Socket) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
      s.on('error', () => undefined);
    });
  }

  get dockerHost(): string {
    return `unix://${this.socket}`;
  }

  /** Connections open right now. */
  get openConnections(): number {
    return this.sockets.size;
  }

  static async start(mode: SickMode): Promise<SickEngine> {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-sick-'));
    const socket = path.join(dir, 'docker.sock');
    const ref: { sick?: SickEngine } = {};
    const server =
      mode === 'silent'
        ? net.createServer((s) => {
            s.resume();
            ref.sick!.unanswered++;
          })
        : http.createServer((req, res) => ref.sick!.handle(mode, req, res));
    const sick = (ref.sick = new SickEngine(dir, socket, server));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(socket, () => resolve());
    });
    return sick;
  }

  private handle(mode: 'ping-only' | { proxyTo: string }, req: http.IncomingMessage, res: http.ServerResponse): void {
    const p = (req.url ?? '/').split('?')[0] ?? '/';
    if (mode === 'ping-only') {
      req.resume();
      if (p.endsWith('/_ping')) res.writeHead(200, { 'content-type': 'text/plain', 'api-version': '1.43' }).end('OK');
      else this.leave(p);
      return;
    }
    if (this.hangAll || (this.hangEvents && p.endsWith('/events'))) {
      req.resume();
      this.leave(p);
      return;
    }
    const up = http.request({ socketPath: mode.proxyTo, method: req.method, path: req.url, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      res.flushHeaders();
      r.pipe(res);
    });
    up.on('error', () => res.destroy());
    res.on('close', () => up.destroy());
    req.pipe(up);
  }

  private leave(p: string): void {
    this.unanswered++;
    this.unansweredPaths.push(p);
  }

  /** Drops every connection at once, as an engine that is killed does. */
  dropAll(): void {
    for (const s of this.sockets) s.destroy();
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    await fs.rm(this.dir, { recursive: true, force: true });
  }
}
