/**
 * The bench's own Engine API client: Node's `http` module over the unix socket, no client
 * library. It is the "floor" contender (the least any client must do) and the bench's eyes:
 * lists, events and clean-up by label.
 */
import http from 'node:http';

export const SOCKET = '/var/run/docker.sock';

/** The engine's socket: DOCKER_HOST's when it names one (the newest engine's turn, lib/engine-turn.ts), else the machine's. */
export function socketFromEnv(env: NodeJS.ProcessEnv = process.env): string {
  return env.DOCKER_HOST?.startsWith('unix://') ? env.DOCKER_HOST.slice('unix://'.length) : SOCKET;
}

export interface EngineResponse {
  status: number;
  body: string;
}

const REQUEST_TIMEOUT_MS = 120_000;

export class EngineError extends Error {
  constructor(
    readonly method: string,
    readonly path: string,
    readonly status: number,
    body: string,
  ) {
    super(`${method} ${path} → ${status}: ${body.trim().slice(0, 300)}`);
  }
}

export class RawEngine {
  /** Keep-alive connections, as any long-lived client would hold. */
  readonly agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

  constructor(readonly socketPath = SOCKET) {
    if (process.env.DOCKER_HOST && !process.env.DOCKER_HOST.startsWith(`unix://${socketPath}`)) {
      throw new Error(`DOCKER_HOST=${process.env.DOCKER_HOST}: the bench talks to the local socket ${socketPath} only`);
    }
  }

  request(method: string, path: string, body?: unknown): Promise<EngineResponse> {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    return this.send(method, path, payload, 'application/json');
  }

  /** PUT a tar archive into a container's filesystem (what `docker cp` into a container sends). */
  putArchive(id: string, dir: string, tar: Buffer): Promise<EngineResponse> {
    return this.send('PUT', `/containers/${id}/archive?path=${encodeURIComponent(dir)}`, tar, 'application/x-tar');
  }

  private send(method: string, path: string, payload: Buffer | undefined, contentType: string): Promise<EngineResponse> {
    return new Promise((resolve, reject) => {
      const req = http.request(
        {
          socketPath: this.socketPath,
          agent: this.agent,
          method,
          path,
          headers: payload ? { 'Content-Type': contentType, 'Content-Length': payload.length } : {},
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      // An engine that stops answering fails the bench loudly instead of hanging it (seen once
      // here: dockerd stopped answering every call midway through a cold-start round).
      req.setTimeout(REQUEST_TIMEOUT_MS, () => req.destroy(new Error(`${method} ${path}: the engine did not answer within ${REQUEST_TIMEOUT_MS / 1000} s`)));
      req.end(payload);
    });
  }

  /** A request that must answer 2xx (or one of `ok`); the parsed JSON body, if any. */
  async call<T = unknown>(method: string, path: string, body?: unknown, ok: number[] = []): Promise<T> {
    const r = await this.request(method, path, body);
    if ((r.status < 200 || r.status >= 300) && !ok.includes(r.status)) throw new EngineError(method, path, r.status, r.body);
    return (r.body ? JSON.parse(r.body) : undefined) as T;
  }

  async ping(): Promise<void> {
    const r = await this.request('GET', '/_ping');
    if (r.status !== 200) throw new Error(`engine ping answered ${r.status}`);
  }

  async version(): Promise<{ Version: string; ApiVersion: string; KernelVersion?: string; Os?: string }> {
    return this.call('GET', '/version');
  }

  async info(): Promise<{ NCPU: number; MemTotal: number; Driver: string; CgroupVersion?: string; CgroupDriver?: string; OperatingSystem?: string }> {
    return this.call('GET', '/info');
  }

  async createContainer(name: string, config: unknown): Promise<string> {
    const r = await this.call<{ Id: string }>('POST', `/containers/create?name=${encodeURIComponent(name)}`, config);
    return r.Id;
  }

  async startContainer(id: string): Promise<void> {
    await this.call('POST', `/containers/${id}/start`, undefined, [304]);
  }

  /** Force-removes; gone already (404) or being removed already (409) count as removed. */
  async removeContainer(id: string): Promise<void> {
    await this.call('DELETE', `/containers/${id}?force=1&v=1`, undefined, [404, 409]);
  }

  listContainers(
    labels: string[],
    opts: { all?: boolean; status?: string } = {},
  ): Promise<{ Id: string; Names: string[]; State: string; Created: number; Labels: Record<string, string> | null }[]> {
    const filters: Record<string, string[]> = { label: labels };
    if (opts.status) filters.status = [opts.status];
    return this.call('GET', `/containers/json?all=${opts.all === false ? 0 : 1}&filters=${encodeURIComponent(JSON.stringify(filters))}`);
  }

  listNetworks(labels: string[]): Promise<{ Id: string; Name: string; Labels: Record<string, string> | null }[]> {
    return this.call('GET', `/networks?filters=${encodeURIComponent(JSON.stringify({ label: labels }))}`);
  }

  async listVolumes(labels: string[]): Promise<{ Name: string; Labels: Record<string, string> | null }[]> {
    const r = await this.call<{ Volumes: { Name: string; Labels: Record<string, string> | null }[] | null }>(
      'GET',
      `/volumes?filters=${encodeURIComponent(JSON.stringify({ label: labels }))}`,
    );
    return r.Volumes ?? [];
  }

  /**
   * Subscribes to the engine's event stream with the given filters. `onEvent` sees each event
   * with the engine's own timestamp (ms since the epoch, from `timeNano`) and the time it
   * arrived here. Resolves once the stream is open (the engine answered the request).
   */
  subscribe(filters: Record<string, string[]>, onEvent: (ev: EngineEvent) => void): Promise<{ close(): void }> {
    const path = `/events?filters=${encodeURIComponent(JSON.stringify(filters))}`;
    return new Promise((resolve, reject) => {
      // Its own connection: a stream never returns its socket to the pool.
      const req = http.request({ socketPath: this.socketPath, method: 'GET', path, agent: false }, (res) => {
        if (res.statusCode !== 200) {
          reject(new Error(`GET /events answered ${res.statusCode}`));
          res.resume();
          return;
        }
        let buf = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          const arrived = Date.now();
          buf += chunk;
          let nl: number;
          while ((nl = buf.indexOf('\n')) >= 0) {
            const line = buf.slice(0, nl).trim();
            buf = buf.slice(nl + 1);
            if (line) {
              const ev = parseEvent(line, arrived);
              if (ev) onEvent(ev);
            }
          }
        });
        res.on('error', () => undefined);
        resolve({
          close() {
            req.destroy();
          },
        });
      });
      req.on('error', (err) => reject(err));
      req.end();
    });
  }
}

export interface EngineEvent {
  type: string;
  action: string;
  id: string;
  attributes: Record<string, string>;
  /** The engine's timestamp of the event, ms since the epoch (sub-ms precision). */
  engineMs: number;
  /** When the bench read it, ms since the epoch. */
  arrivedMs: number;
}

function parseEvent(line: string, arrivedMs: number): EngineEvent | undefined {
  let raw: { Type?: string; Action?: string; Actor?: { ID?: string; Attributes?: Record<string, string> } };
  try {
    raw = JSON.parse(line) as typeof raw;
  } catch {
    return undefined;
  }
  // timeNano exceeds 2^53: read its digits as text.
  const m = /"timeNano":(\d+)/.exec(line);
  const engineMs = m ? Number(BigInt(m[1] as string) / 1000n) / 1000 : arrivedMs;
  return {
    type: raw.Type ?? '',
    action: raw.Action ?? '',
    id: raw.Actor?.ID ?? '',
    attributes: raw.Actor?.Attributes ?? {},
    engineMs,
    arrivedMs,
  };
}
