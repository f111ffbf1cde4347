/**
 * A real registry of the test's own: Debian's `docker-registry` (distribution 2.8, installed by
 * scripts/registry-up.sh), started per test file with TLS (a CA of the test's own, which the
 * engine trusts through /etc/docker/certs.d/<ip>:<port>/ca.crt) and htpasswd (bcrypt) auth, on
 * the docker0 gateway's address: not loopback, which the engine would treat as insecure and
 * skip the certificate check for. Images go in with skopeo from the engine's own store. The
 * access log counts requests (one pull per image). `stop()` ends it by its pid and removes its
 * folder and the engine's trust entry; the root hook (test/hooks.ts) fails a run that left one.
 *
 * `front()` puts a small HTTPS server of the test's own before it (on an address of its own) that
 * forwards to the registry, or answers with a fault: 401, 404, 429 with Retry-After, 500, a
 * connection cut in the middle of a layer, a layer whose bytes do not match its digest (the
 * engine reports that inside its 200 stream), or nothing at all.
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { promises as fs, readdirSync, readFileSync, rmSync } from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { ended, processTable } from './procs';
import { TEST_RUN } from './engine';
import { makeTestCa, type TestCa } from './tls-ca';

const run = promisify(execFile);

/** Where the engine looks for a registry's CA. */
export const CERTS_D = '/etc/docker/certs.d';
/** A file in each trust entry a test made, naming its test run: the root hook finds leftovers by it. */
const MARK = 'berth-test-run';
/**
 * The registry's address: the default bridge's gateway (an address of this host that is not
 * loopback), read from the docker0 link of the network namespace the tests run in: the machine's
 * engine's (172.17.0.1), or in `make test-engines`' turn on a private engine, that engine's own
 * (its --bip, in its namespace, where 172.17.0.1 is no address).
 */
export const REGISTRY_IP = bridgeGateway();

/** docker0's IPv4 address here (`ip`: Node's list leaves out a link that is down, as docker0 is with no container on it). */
function bridgeGateway(): string {
  try {
    return /\binet (\d+\.\d+\.\d+\.\d+)\//.exec(execFileSync('ip', ['-4', '-o', 'addr', 'show', 'dev', 'docker0'], { encoding: 'utf8' }))?.[1] ?? '172.17.0.1';
  } catch {
    return '172.17.0.1';
  }
}

export interface RegistryUser {
  user: string;
  password: string;
}

/** An address of REGISTRY_IP with a port nobody listens on now (the kernel's choice). */
export async function freePort(ip = REGISTRY_IP): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((resolve, reject) => srv.once('error', reject).listen(0, ip, resolve));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}

async function trust(host: string, ca: string): Promise<string> {
  const dir = path.join(CERTS_D, host);
  await fs.mkdir(dir, { recursive: true });
  await fs.writeFile(path.join(dir, 'ca.crt'), ca);
  await fs.writeFile(path.join(dir, MARK), TEST_RUN);
  return dir;
}

export class TestRegistry {
  private constructor(
    readonly dir: string,
    readonly host: string,
    readonly user: RegistryUser,
    readonly ca: TestCa,
    private readonly proc: ChildProcess,
    private readonly trusted: string[],
    private readonly fronts: RegistryFront[],
    /** The network namespace it listens in (none: this host's). */
    readonly netns?: string,
  ) {}

  /**
   * Starts one, ready (its /v2/ answers 401 without credentials). `at`: in a network namespace of
   * the test's own (a test swarm's hub), on an address there, reached only from that network.
   */
  static async start(
    user: RegistryUser = { user: 'tester', password: `pw-${TEST_RUN}-${Math.random().toString(36).slice(2)}` },
    at?: { netns: string; ip: string },
  ): Promise<TestRegistry> {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), `berth-registry-${TEST_RUN}-`));
    const ip = at?.ip ?? REGISTRY_IP;
    const ca = makeTestCa([], [ip]);
    await fs.writeFile(path.join(dir, 'srv.crt'), ca.cert);
    await fs.writeFile(path.join(dir, 'srv.key'), ca.key, { mode: 0o600 });
    await fs.mkdir(path.join(dir, 'certs'));
    await fs.writeFile(path.join(dir, 'certs', 'ca.crt'), ca.ca);
    // bcrypt, the password on stdin (never argv)
    const hp = execFile('htpasswd', ['-Bin', user.user]);
    let out = '';
    hp.stdout?.on('data', (b: string | Buffer) => (out += String(b)));
    hp.stdin?.end(user.password);
    await new Promise<void>((resolve, reject) =>
      hp.once('error', reject).once('exit', (c) => (c === 0 ? resolve() : reject(new Error(`htpasswd exited ${c}`)))),
    );
    await fs.writeFile(path.join(dir, 'htpasswd'), out);
    // in a namespace of the test's own: a port from a wide range (its trust entry's name is shared by every engine here)
    const port = at ? 20000 + Math.floor(Math.random() * 40000) : await freePort();
    const host = `${ip}:${port}`;
    const config = [
      'version: 0.1',
      'log: {level: info, accesslog: {disabled: false}}',
      `storage: {filesystem: {rootdirectory: ${dir}/data}, delete: {enabled: true}}`,
      `http: {addr: "${host}", tls: {certificate: ${dir}/srv.crt, key: ${dir}/srv.key}}`,
      `auth: {htpasswd: {realm: berth-test, path: ${dir}/htpasswd}}`,
      '',
    ].join('\n');
    await fs.writeFile(path.join(dir, 'config.yml'), config);
    const log = await fs.open(path.join(dir, 'registry.log'), 'a');
    const argv = ['docker-registry', 'serve', path.join(dir, 'config.yml')];
    const proc = at
      ? spawn('nsenter', [`--net=/var/run/netns/${at.netns}`, ...argv], { stdio: ['ignore', log.fd, log.fd] })
      : spawn(argv[0] as string, argv.slice(1), { stdio: ['ignore', log.fd, log.fd], detached: false });
    await log.close();
    const trusted = [await trust(host, ca.ca)];
    const reg = new TestRegistry(dir, host, user, ca, proc, trusted, [], at?.netns);
    try {
      await reg.ready();
    } catch (err) {
      await reg.stop();
      throw err;
    }
    return reg;
  }

  /** The registry answers (401 without credentials), waited for within 15 s. */
  private async ready(): Promise<void> {
    const deadline = Date.now() + 15_000;
    for (;;) {
      // in a namespace: its log says when it listens (this host cannot reach it)
      const status = this.netns ? ((await this.log()).includes('listening on') ? 401 : 0) : await this.get('/v2/').catch(() => 0);
      if (status === 401) return;
      if (this.proc.exitCode !== null) throw new Error(`docker-registry exited ${this.proc.exitCode}: ${await this.log()}`);
      if (Date.now() > deadline) throw new Error(`docker-registry at ${this.host} did not answer within 15 s: ${await this.log()}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  private get(p: string): Promise<number> {
    return new Promise((resolve, reject) => {
      const [hostname, port] = this.host.split(':');
      const req = https.get({ hostname, port: Number(port), path: p, ca: this.ca.ca, timeout: 2000 }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.on('timeout', () => req.destroy(new Error('timeout')));
    });
  }

  log(): Promise<string> {
    return fs.readFile(path.join(this.dir, 'registry.log'), 'utf8').catch(() => '');
  }

  /** Copies the engine's image `local` into this registry as `repo:tag` (skopeo, from the engine's store). */
  async push(local: string, ref: string): Promise<string> {
    const target = `${this.host}/${ref}`;
    const creds = path.join(this.dir, 'push-auth.json');
    // skopeo reads the credential from an auth file (never argv)
    const auth = Buffer.from(`${this.user.user}:${this.user.password}`).toString('base64');
    await fs.writeFile(creds, JSON.stringify({ auths: { [this.host]: { auth } } }), { mode: 0o600 });
    const ns = this.netns ? ['nsenter', `--net=/var/run/netns/${this.netns}`] : [];
    // skopeo's docker-daemon source reads no DOCKER_HOST (and speaks API 1.22 to one named): with a
    // private engine (make test-engines' turns) the image comes through `docker save` instead
    let source = `docker-daemon:${local}`;
    if (process.env.DOCKER_HOST) {
      const tar = path.join(this.dir, 'push.tar');
      await run('docker', ['save', '-o', tar, local]);
      source = `docker-archive:${tar}`;
    }
    await run(ns[0] ?? 'skopeo', [
      ...ns.slice(1),
      ...(ns.length ? ['skopeo'] : []),
      '--insecure-policy',
      'copy',
      '--quiet',
      '--dest-authfile',
      creds,
      '--dest-cert-dir',
      path.join(this.dir, 'certs'),
      source,
      `docker://${target}`,
    ]);
    if (source.startsWith('docker-archive:')) await fs.rm(path.join(this.dir, 'push.tar'), { force: true });
    return target;
  }

  /** Requests the access log holds whose request line matches `re` (as `GET /v2/<repo>/blobs/...`). */
  async requests(re: RegExp): Promise<string[]> {
    const lines = (await this.log()).split('\n').filter((l) => /"(GET|HEAD|PUT|POST|PATCH|DELETE) \/v2\//.test(l));
    return lines.map((l) => /"((?:GET|HEAD|PUT|POST|PATCH|DELETE) [^"]*)"/.exec(l)?.[1] ?? '').filter((l) => re.test(l));
  }

  /** A docker config.json `auths` entry for this registry, or for a front of it (for a test's DOCKER_CONFIG). */
  authEntry(host = this.host): Record<string, { auth: string }> {
    return { [host]: { auth: Buffer.from(`${this.user.user}:${this.user.password}`).toString('base64') } };
  }

  /** A front of the test's own before this registry, trusted by the engine too (see RegistryFront). */
  async front(): Promise<RegistryFront> {
    const f = await RegistryFront.start(this);
    this.fronts.push(f);
    this.trusted.push(await trust(f.host, this.ca.ca));
    return f;
  }

  /** Ends it by its pid, its fronts too, and removes its folder and the engine's trust entries. */
  async stop(): Promise<void> {
    for (const f of this.fronts) await f.stop();
    if (this.proc.pid !== undefined && this.proc.exitCode === null) {
      this.proc.kill('SIGTERM');
      if (!(await ended(this.proc.pid, 10_000))) this.proc.kill('SIGKILL');
      await ended(this.proc.pid, 5_000);
    }
    for (const t of this.trusted) await fs.rm(t, { recursive: true, force: true });
    await fs.rm(this.dir, { recursive: true, force: true });
  }
}

export type Fault =
  | { kind: 'pass' }
  | { kind: 'status'; status: 401 | 404 | 429 | 500; retryAfter?: number }
  /** The first `times` layer downloads cut after half their bytes (then passed). */
  | { kind: 'cut'; times: number }
  /** Every layer served with one byte changed: its digest does not match. */
  | { kind: 'corrupt' }
  /** Connections accepted and never answered. */
  | { kind: 'silent' };

const ERROR_CODES: Record<number, string> = { 401: 'UNAUTHORIZED', 404: 'MANIFEST_UNKNOWN', 429: 'TOOMANYREQUESTS', 500: 'UNKNOWN' };

/** An HTTPS front before a TestRegistry that forwards to it, or answers with `fault`. */
export class RegistryFront {
  fault: Fault = { kind: 'pass' };
  /** Called with each request line as it comes (a test switches the fault on the first it sees). */
  onRequest: ((line: string) => void) | undefined;
  /** Request lines it saw, in order, with when (ms since the epoch). */
  readonly seen: { at: number; line: string; ua: string }[] = [];
  private readonly held = new Set<net.Socket>();

  private constructor(
    readonly host: string,
    private readonly server: https.Server,
    private readonly tcp: net.Server,
  ) {}

  static async start(reg: TestRegistry): Promise<RegistryFront> {
    const [rhost, rport] = reg.host.split(':');
    let front: RegistryFront | undefined = undefined;
    const server = https.createServer({ key: reg.ca.key, cert: reg.ca.cert }, (req, res) => {
      const f = front as RegistryFront;
      f.seen.push({ at: Date.now(), line: `${req.method} ${req.url}`, ua: String(req.headers['user-agent'] ?? '') });
      f.onRequest?.(`${req.method} ${req.url}`);
      const fault = f.fault;
      const isManifest = /\/manifests\//.test(req.url ?? '');
      const isBlob = /\/blobs\/sha256:/.test(req.url ?? '') && req.method === 'GET';
      if (fault.kind === 'status' && (isManifest || fault.status === 401)) {
        const headers: Record<string, string> = { 'content-type': 'application/json', 'docker-distribution-api-version': 'registry/2.0' };
        if (fault.status === 401) headers['www-authenticate'] = 'Basic realm="berth-test"';
        if (fault.retryAfter !== undefined) headers['retry-after'] = String(fault.retryAfter);
        res.writeHead(fault.status, headers);
        res.end(JSON.stringify({ errors: [{ code: ERROR_CODES[fault.status], message: `test fault ${fault.status}`, detail: null }] }));
        return;
      }
      const up = https.request(
        { hostname: rhost, port: Number(rport), path: req.url, method: req.method, headers: { ...req.headers, host: reg.host }, ca: reg.ca.ca },
        (ur) => {
          const cut = isBlob && fault.kind === 'cut' && fault.times > 0;
          if (cut && fault.kind === 'cut') fault.times--;
          const corrupt = isBlob && fault.kind === 'corrupt' && ur.statusCode === 200;
          res.writeHead(ur.statusCode ?? 502, ur.headers);
          if (!cut && !corrupt) {
            ur.pipe(res);
            return;
          }
          const len = Number(ur.headers['content-length'] ?? 0);
          let sent = 0;
          let flipped = false;
          ur.on('data', (chunk: Buffer) => {
            if (cut && sent + chunk.length >= len / 2) {
              res.write(chunk.subarray(0, Math.max(0, Math.floor(len / 2) - sent)));
              ur.destroy();
              res.socket?.destroy();
              return;
            }
            if (corrupt && !flipped && chunk.length > 0) {
              const c = Buffer.from(chunk);
              c[c.length - 1] = (c[c.length - 1] ?? 0) ^ 0xff;
              chunk = c;
              flipped = true;
            }
            sent += chunk.length;
            res.write(chunk);
          });
          ur.on('end', () => res.end());
        },
      );
      up.on('error', () => res.socket?.destroy());
      req.pipe(up);
    });
    // the https server listens inside; the front's address is a TCP server that forwards to it, or
    // (silent) holds every connection unanswered, TLS and all
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
    const inner = (server.address() as net.AddressInfo).port;
    const tcp = net.createServer((s) => {
      const f = front as RegistryFront;
      f.held.add(s);
      s.on('close', () => f.held.delete(s));
      s.on('error', () => undefined);
      if (f.fault.kind === 'silent') return;
      const to = net.connect(inner, '127.0.0.1');
      to.on('error', () => s.destroy());
      s.pipe(to).pipe(s);
      s.on('close', () => to.destroy());
      to.on('close', () => s.destroy());
    });
    const port = await freePort();
    await new Promise<void>((resolve, reject) => tcp.once('error', reject).listen(port, REGISTRY_IP, resolve));
    front = new RegistryFront(`${REGISTRY_IP}:${port}`, server, tcp);
    return front;
  }

  /** Sets the fault; connections kept alive from before are closed, so the next request meets it. */
  set(fault: Fault): void {
    this.fault = fault;
    for (const s of this.held) s.destroy();
    this.server.closeAllConnections();
  }

  async stop(): Promise<void> {
    for (const s of this.held) s.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.tcp.close(() => resolve()));
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/**
 * What this test run left of its registries: a docker-registry process whose config lies in a
 * folder of this run, or a trust entry this run made. Removed (the process ended by its pid),
 * and named, so the root hook fails the run.
 */
export async function removeLeftoverRegistries(): Promise<string[]> {
  const left: string[] = [];
  for (const p of await processTable()) {
    if (p.args.startsWith('docker-registry ') && p.args.includes(`berth-registry-${TEST_RUN}-`)) {
      left.push(`docker-registry pid ${p.pid}`);
      try {
        process.kill(p.pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
  }
  let entries: string[] = [];
  try {
    entries = readdirSync(CERTS_D);
  } catch {
    entries = [];
  }
  for (const e of entries) {
    let mark = '';
    try {
      mark = readFileSync(path.join(CERTS_D, e, MARK), 'utf8');
    } catch {
      continue;
    }
    if (mark !== TEST_RUN) continue;
    left.push(`${CERTS_D}/${e}`);
    rmSync(path.join(CERTS_D, e), { recursive: true, force: true });
  }
  return left;
}

/**
 * An image of the test's own: `berth/busybox:local` and one more layer of `bytes` random bytes
 * (so its layer is on no engine yet), labeled with this test run. Built by the engine from a
 * context of one file; nothing is downloaded.
 */
export async function makeTestImage(tag: string, bytes = 64 * 1024): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), `berth-image-${TEST_RUN}-`));
  try {
    const { randomBytes } = await import('node:crypto');
    await fs.writeFile(path.join(dir, 'blob'), randomBytes(bytes));
    await fs.writeFile(path.join(dir, 'Dockerfile'), 'FROM berth/busybox:local\nCOPY blob /blob\n');
    await run('docker', ['build', '-q', '--label', `dev.berth.test-run=${TEST_RUN}`, '-t', tag, dir], { env: { ...process.env, DOCKER_BUILDKIT: '0' } });
    return tag;
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}

/** Removes the engine's images tagged `ref` (every tag of them), as a pull's test starts from none. */
export async function removeImage(ref: string): Promise<void> {
  await run('docker', ['image', 'rm', '-f', ref]).catch(() => undefined);
}
