/**
 * The HTTP API `berth reconcile` serves (docs/CONTRACT.md, "Exec, copy and sandboxes"): on the
 * Unix socket `<state>/<instance>/api.sock` (mode 0600: made in a private folder and renamed into
 * place, so it is never reachable with a wider mode), and with `--api-addr HOST:PORT` on TCP too,
 * where every request must carry `Authorization: Bearer <the token of --api-token-file>` (401
 * otherwise; compared in constant time). The routes:
 *
 *   GET    /v1/attempts/NAME                the `get -o json` item
 *   POST   /v1/attempts/NAME/exec           {cmd, input, cwd, env, timeout} -> {exitCode, stdout, stderr, truncated}
 *   PUT    /v1/attempts/NAME/files?path=P   the body, a file's bytes (Content-Length required)
 *   GET    /v1/attempts/NAME/files?path=P   a regular file's bytes
 *   POST   /v1/attempts/NAME/release        {exitCode}
 *   POST   /v1/attempts                     a spec document: the attempt (or set) made (specs.ts)
 *   DELETE /v1/attempts/NAME                the API's document removed
 *
 * Only this instance's attempts are reached (its records). Bounds: a JSON body of at most
 * API.maxBodyBytes, a file of at most API.maxFileBytes (both 413 from the declared length, before
 * a byte is read), each of an exec's stdout and stderr kept up to --api-max-output (the rest read
 * and dropped: `truncated`), never more; a client that takes nothing of its answer for API.idleMs
 * is cut off. An exec whose client goes away, or past its timeout, is killed in the container
 * (touch/exec.ts).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Writable } from 'node:stream';
import { API } from '../constants';
import type { Engine } from '../engine/types';
import type { LoadReport } from '../spec/loader';
import type { ControllerRequest, RequestAnswer } from '../status/requests';
import type { StatusStore } from '../status/store';
import { CopyError, containerPath, copyErrorText, getFile, putFile } from '../touch/copy';
import { execInto } from '../touch/exec';
import { findTarget, type Refusal, type Target } from '../touch/target';
import { parseAddr } from '../util/addr';
import type { Logger } from '../util/log';
import { HttpError, readJson, readBody } from './body';
import { createFromDocument, deleteDocument } from './specs';

export interface ApiController {
  carryOut(req: ControllerRequest): Promise<RequestAnswer>;
  latestLoad(): LoadReport | undefined;
  reloadSpecs(): void;
}

export interface ApiOptions {
  stateDir: string;
  instance: string;
  specsDir: string;
  resultsRoot: string;
  env: NodeJS.ProcessEnv;
  engine: Engine;
  store: StatusStore;
  log: Logger;
  controller: ApiController;
  /** The `get -o json` item of an attempt of this instance (undefined: none by that name). */
  item(name: string): Promise<unknown>;
  /** `--api-addr`, with the token every request on it must carry. */
  tcp?: { addr: string; token: string };
  /** `--api-max-output`: bytes of an exec's stdout and of its stderr an answer carries. */
  maxOutputBytes: number;
  /** Specs from git: no document is made or removed here. */
  git?: boolean;
  /** A client that takes nothing of its answer (or sends nothing of its request) this long is cut off (API.idleMs). */
  idleMs?: number;
}

export interface ApiServer {
  /** The socket's path, and the TCP address when there is one. */
  socket: string;
  url?: string;
  close(): Promise<void>;
}

const NAME_RE = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

export function apiSocketPath(stateDir: string, instance: string): string {
  return path.join(stateDir, instance, API.socket);
}

/** Each answer's idle bound (ApiOptions.idleMs). */
const idleOf = new WeakMap<http.ServerResponse, number>();
const idle = (res: http.ServerResponse): number => idleOf.get(res) ?? API.idleMs;

function send(res: http.ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const text = JSON.stringify(body) + '\n';
  res.setTimeout(idle(res));
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store' }).end(text);
}

const failed = (res: http.ServerResponse, status: number, error: string, more: Record<string, unknown> = {}) => send(res, status, { error, ...more });

/** An answer's share of one output stream: at most `max` bytes kept, the rest read and counted. */
class Kept extends Writable {
  private readonly chunks: Buffer[] = [];
  private n = 0;
  cut = false;
  constructor(private readonly max: number) {
    super();
  }
  override _write(chunk: Buffer, _enc: BufferEncoding, cb: () => void): void {
    const room = this.max - this.n;
    if (chunk.length > room) this.cut = true;
    if (room > 0) {
      const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
      this.chunks.push(part);
      this.n += part.length;
    }
    cb();
  }
  /** UTF-8, cut before a character the bound split. */
  text(): string {
    let b = Buffer.concat(this.chunks);
    if (this.cut) {
      let end = b.length;
      // back to the start of the last character, then keep it only if it is whole
      let i = end - 1;
      while (i >= 0 && i > end - 4 && ((b[i] as number) & 0xc0) === 0x80) i--;
      if (i >= 0) {
        const lead = b[i] as number;
        const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
        if (end - i < need) end = i;
      }
      b = b.subarray(0, end);
    }
    return b.toString('utf8');
  }
}

function tokenOk(header: string | undefined, token: string): boolean {
  const m = /^Bearer (.+)$/.exec(header ?? '');
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return !!m && timingSafeEqual(digest(m[1] as string), digest(token));
}

export async function serveApi(o: ApiOptions): Promise<ApiServer> {
  const handler = (tcp: boolean) => (req: http.IncomingMessage, res: http.ServerResponse) => {
    idleOf.set(res, o.idleMs ?? API.idleMs);
    req.setTimeout(idle(res));
    if (tcp && !tokenOk(req.headers.authorization, o.tcp?.token ?? '')) {
      res.setHeader('www-authenticate', 'Bearer');
      req.resume();
      return failed(res, 401, 'a bearer token is required (the one of --api-token-file)');
    }
    route(o, req, res).catch((err: unknown) => {
      if (err instanceof HttpError) return failed(res, err.status, err.message, err.errors !== undefined ? { errors: err.errors } : {});
      o.log.warn(`api ${req.method} ${req.url}: ${(err as Error).message}`);
      failed(res, 500, (err as Error).message);
    });
  };
  const servers: http.Server[] = [];
  const make = (tcp: boolean) => {
    const s = http.createServer(handler(tcp));
    // bounds of our own (idle times per request, bodies by size): no total time for a long exec or a large file
    s.requestTimeout = 0;
    s.timeout = 0;
    s.headersTimeout = 30_000;
    s.keepAliveTimeout = 5_000;
    servers.push(s);
    return s;
  };
  const socket = apiSocketPath(o.stateDir, o.instance);
  await listenPrivately(make(false), socket);
  let url: string | undefined;
  if (o.tcp) {
    const { host, port } = parseAddr(o.tcp.addr, '--api-addr', '127.0.0.1:9465');
    const s = make(true);
    await new Promise<void>((resolve, reject) => {
      s.once('error', reject);
      s.listen(port, host, () => resolve());
    });
    const a = s.address() as AddressInfo;
    url = `http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`;
  }
  return {
    socket,
    ...(url ? { url } : {}),
    async close() {
      await Promise.all(
        servers.map(
          (s) =>
            new Promise<void>((resolve) => {
              s.close(() => resolve());
              s.closeAllConnections();
            }),
        ),
      );
      await fsp.rm(socket, { force: true });
    },
  };
}

/** Listens on `socket` without it ever being reachable with a mode wider than 0600: made in a folder of mode 0700, then renamed. */
async function listenPrivately(s: http.Server, socket: string): Promise<void> {
  const dir = path.dirname(socket);
  await fsp.mkdir(dir, { recursive: true });
  const priv = await fsp.mkdtemp(path.join(dir, '.api-'));
  try {
    await fsp.chmod(priv, 0o700);
    const tmp = path.join(priv, API.socket);
    await new Promise<void>((resolve, reject) => {
      s.once('error', reject);
      s.listen(tmp, () => resolve());
    });
    await fsp.chmod(tmp, 0o600);
    // a socket a berth that is gone left: this process holds the instance, so it is no one's
    await fsp.rename(tmp, socket);
  } finally {
    await fsp.rm(priv, { recursive: true, force: true });
  }
}

async function route(o: ApiOptions, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://berth');
  const m = /^\/v1\/attempts(?:\/([^/]+)(?:\/(exec|files|release))?)?\/?$/.exec(url.pathname);
  if (!m) throw new HttpError(404, `no such route: ${req.method} ${url.pathname}`);
  const sub = m[2];
  if (m[1] === undefined) {
    if (req.method !== 'POST') throw new HttpError(405, 'POST /v1/attempts makes an attempt from a spec document');
    return create(o, req, res);
  }
  let name: string;
  try {
    name = decodeURIComponent(m[1]).replace(/^attempt\//, '');
  } catch {
    throw new HttpError(400, 'the attempt name is not well encoded');
  }
  if (!NAME_RE.test(name)) throw new HttpError(400, `${JSON.stringify(name)} is not an attempt name (a DNS-1123 label)`);
  const key = `${req.method} ${sub ?? ''}`;
  switch (key) {
    case 'GET ': {
      const item = await o.item(name);
      if (item === undefined) throw new HttpError(404, `attempt ${name} not found in instance ${o.instance}`);
      return send(res, 200, item);
    }
    case 'DELETE ':
      if (o.git) throw new HttpError(409, 'the specs come from git: remove the attempt from the repository');
      req.resume();
      return done(o, res, 200, await deleteDocument(o.specsDir, name, o.controller.latestLoad()));
    case 'POST exec':
      return exec(o, name, req, res);
    case 'GET files':
    case 'PUT files':
      return files(o, name, req, res, url.searchParams.get('path'));
    case 'POST release':
      return release(o, name, req, res);
    default:
      throw new HttpError(405, `${req.method} is not taken by /v1/attempts/NAME${sub ? `/${sub}` : ''}`);
  }
}

/** The answer to a change of the specs, after asking the controller to load them. */
function done(o: ApiOptions, res: http.ServerResponse, status: number, body: unknown): void {
  o.controller.reloadSpecs();
  send(res, status, body);
}

async function target(o: ApiOptions, name: string): Promise<Target> {
  const t = await findTarget({ store: o.store, engine: o.engine, resultsRoot: o.resultsRoot, env: o.env, name });
  if ('refused' in t) throw refusal(t);
  return t;
}

const refusal = (r: Refusal) => new HttpError(r.why === 'not-found' ? 404 : 409, r.refused);

const str = (v: unknown, what: string): string | undefined => {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw new HttpError(400, `${what}: a string expected`);
  return v;
};

async function exec(o: ApiOptions, name: string, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const b = await readJson(req, API.maxBodyBytes);
  const cmd = b.cmd;
  if (!Array.isArray(cmd) || cmd.length === 0 || !cmd.every((c) => typeof c === 'string'))
    throw new HttpError(400, 'cmd: a non-empty list of strings expected (["sh", "-c", "..."])');
  const input = str(b.input, 'input');
  const cwd = str(b.cwd, 'cwd');
  if (cwd !== undefined && !cwd.startsWith('/')) throw new HttpError(400, 'cwd: an absolute path expected');
  const env: Record<string, string> = {};
  if (b.env !== undefined && b.env !== null) {
    if (typeof b.env !== 'object' || Array.isArray(b.env)) throw new HttpError(400, 'env: an object of strings expected');
    for (const [k, v] of Object.entries(b.env as Record<string, unknown>)) {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(k) || typeof v !== 'string') throw new HttpError(400, `env.${k}: a variable name and a string value expected`);
      env[k] = v;
    }
  }
  const timeout = b.timeout;
  if (timeout !== undefined && timeout !== null && !(typeof timeout === 'number' && timeout > 0 && Number.isFinite(timeout)))
    throw new HttpError(400, 'timeout: a number of seconds above 0 expected');
  const t = await target(o, name);
  const out = new Kept(o.maxOutputBytes);
  const err = new Kept(o.maxOutputBytes);
  // the client going away ends the exec (killed in the container); while it runs, the connection may be quiet
  const ac = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) ac.abort(new Error('the client went away'));
  });
  res.setTimeout(0);
  const r = await execInto(
    t,
    {
      cmd: cmd as string[],
      by: 'api',
      ...(cwd !== undefined ? { cwd } : {}),
      ...(Object.keys(env).length ? { env } : {}),
      ...(typeof timeout === 'number' ? { timeoutMs: Math.round(timeout * 1000) } : {}),
      ...(input !== undefined ? { input: Buffer.from(input, 'utf8') } : {}),
    },
    { stdout: out, stderr: err },
    { signal: ac.signal },
  );
  if ('refused' in r) throw refusal(r);
  if (ac.signal.aborted) return;
  send(res, 200, {
    exitCode: r.exitCode,
    stdout: out.text(),
    stderr: err.text(),
    truncated: out.cut || err.cut,
    ...(r.timedOut ? { timedOut: true } : {}),
    ...(r.killed !== undefined ? { killed: r.killed } : {}),
    ...(r.killError ? { message: r.killError } : {}),
  });
}

async function files(o: ApiOptions, name: string, req: http.IncomingMessage, res: http.ServerResponse, p: string | null): Promise<void> {
  if (p === null) throw new HttpError(400, 'path: the query parameter is required (files?path=/workspace/x)');
  const at = p.startsWith('/') ? containerPath(p, '/') : undefined;
  if (!at || at === '/') throw new HttpError(400, `path ${JSON.stringify(p)}: an absolute file path that does not climb (no ..) expected`);
  if (req.method === 'PUT') {
    const declared = req.headers['content-length'];
    if (declared === undefined) throw new HttpError(411, 'Content-Length is required: the file is streamed into the container as it comes');
    const size = Number(declared);
    if (!Number.isSafeInteger(size) || size < 0) throw new HttpError(400, 'Content-Length is not a length');
    if (size > API.maxFileBytes) throw new HttpError(413, `the file is ${size} bytes; at most ${API.maxFileBytes} are taken`);
    const t = await target(o, name);
    let r;
    try {
      r = await putFile(t, at, req, size, 'api');
    } catch (err) {
      throw copyFailure(err);
    }
    if ('refused' in r) throw refusal(r);
    return send(res, 201, { path: at, bytes: r.bytes });
  }
  req.resume();
  const t = await target(o, name);
  let r;
  try {
    r = await getFile(t, at, 'api', async (size, body) => {
      res.setTimeout(idle(res));
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': size, 'cache-control': 'no-store' });
      await new Promise<void>((resolve, reject) => {
        body.on('error', reject);
        res.on('close', () => (res.writableFinished ? resolve() : reject(new Error('the client went away'))));
        body.pipe(res);
      });
    });
  } catch (err) {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    throw copyFailure(err);
  }
  if ('refused' in r) throw refusal(r);
}

function copyFailure(err: unknown): HttpError {
  if (err instanceof HttpError) return err;
  if (err instanceof CopyError) return new HttpError(err.kind === 'not-found' ? 404 : err.kind === 'conflict' ? 409 : 400, err.message);
  return new HttpError(500, copyErrorText(err));
}

async function release(o: ApiOptions, name: string, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const b = await readJson(req, API.maxBodyBytes);
  const code = b.exitCode ?? 0;
  if (!(typeof code === 'number' && Number.isInteger(code) && code >= 0 && code <= 255))
    throw new HttpError(400, 'exitCode: an integer from 0 to 255 expected');
  const id = createHash('sha256').update(`${name}:${Date.now()}:${Math.random()}`).digest('hex').slice(0, 32);
  const asked = o.controller.carryOut({
    id,
    command: 'release',
    names: [name],
    exitCode: code,
    at: new Date().toISOString(),
    by: { pid: process.pid, hostname: 'api', user: 'api' },
  });
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), API.releaseTimeoutMs)));
  const a = await Promise.race([asked, late]).finally(() => clearTimeout(timer));
  if (a === 'late')
    return send(res, 202, {
      name,
      exitCode: code,
      released: 'asked',
      message: 'the controller carries the release out as it can: GET the attempt to follow it',
    });
  if (a.refused) throw new HttpError(409, a.refused);
  const r = a.results[0];
  if (r?.refused) throw new HttpError(r.refused.includes('not found') || r.refused.includes('no valid spec') ? 404 : 409, r.refused);
  if (r?.error) throw new HttpError(500, r.error);
  send(res, 200, { name, exitCode: code, released: true, ops: r?.ops ?? [] });
}

async function create(o: ApiOptions, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  if (o.git) {
    req.resume();
    throw new HttpError(409, 'the specs come from git: add the attempt to the repository');
  }
  const body = await readBody(req, API.maxBodyBytes);
  const made = await createFromDocument(o.specsDir, o.resultsRoot, body, o.controller.latestLoad());
  done(o, res, 201, made);
}
