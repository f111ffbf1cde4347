/**
 * The HTTP API of `berth reconcile` on the real engine (docs/CONTRACT.md, "Exec, copy and
 * sandboxes"): every route through curl on the Unix socket and Node's own HTTP client, the TCP
 * listener's bearer token, and hostile clients: another instance's attempt, a path that climbs,
 * a 2 GiB body, a client that never reads its answer, a client that goes away during an exec,
 * and 100 execs at once.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { API } from '../../src/constants';
import { apiSocketPath } from '../../src/api/server';
import { requireEngine } from '../support/engine';
import { startController, type RunningController } from '../support/controller';
import { Sandbox } from '../support/sandbox';
import { waitFor } from '../support/wait';

const run = promisify(execFile);

interface Answer {
  status: number;
  body: Buffer;
  json(): Record<string, unknown>;
}

/** Node's http client on the socket (or TCP when `port`), the body given whole. */
function request(o: {
  socket?: string;
  port?: number;
  method: string;
  path: string;
  body?: Buffer | string;
  headers?: Record<string, string>;
}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { ...(o.socket ? { socketPath: o.socket } : { host: '127.0.0.1', port: o.port }), method: o.method, path: o.path, headers: o.headers ?? {} },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const body = Buffer.concat(chunks);
          resolve({ status: res.statusCode ?? 0, body, json: () => JSON.parse(body.toString('utf8')) as Record<string, unknown> });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(o.body);
  });
}

async function curl(socket: string, args: string[]): Promise<{ status: number; body: string }> {
  const { stdout } = await run('curl', ['-s', '--unix-socket', socket, '-w', '\n%{http_code}', ...args], { maxBuffer: 64 * 1024 * 1024 });
  const cut = stdout.lastIndexOf('\n');
  return { status: Number(stdout.slice(cut + 1)), body: stdout.slice(0, cut) };
}

async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

const sandboxSpec = (name: string) =>
  `apiVersion: berth.dev/v1\nkind: Attempt\nmetadata:\n  name: ${name}\nspec:\n  image: berth/busybox:local\n  sandbox: true\n  deadlineSeconds: 600\n`;

describe('the HTTP API (real engine)', function () {
  this.timeout(180_000);
  before(requireEngine);

  let sb: Sandbox;
  let other: Sandbox;
  let ctl: RunningController;
  let socket: string;
  let port: number;
  const token = randomBytes(24).toString('hex');
  const json = (body: unknown) => ({ body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  const exec = (name: string, body: unknown) => request({ socket, method: 'POST', path: `/v1/attempts/${name}/exec`, ...json(body) });

  before(async function () {
    sb = await Sandbox.create('api');
    other = await Sandbox.create('api-other');
    await sb.write('s1.yaml', sandboxSpec('s1'));
    await sb.write('s2.yaml', sandboxSpec('s2'));
    await other.write('theirs.yaml', sandboxSpec('theirs'));
    expect((await other.cli('reconcile', '--once')).code).to.equal(0);
    const tokenFile = path.join(sb.dir, 'token');
    await fs.writeFile(tokenFile, token + '\n', { mode: 0o600 });
    port = await freePort();
    ctl = startController(sb, { apiAddr: `127.0.0.1:${port}`, apiTokenFile: tokenFile, apiMaxOutput: 4096, apiIdleMs: 1500 });
    socket = apiSocketPath(sb.stateDir, sb.instance);
    await waitFor(
      'both sandboxes Running and the socket there',
      async () =>
        (await fs.stat(socket).catch(() => undefined)) && (await sb.status('s1'))?.phase === 'Running' && (await sb.status('s2'))?.phase === 'Running',
      { instance: sb.instance, dirs: [path.join(sb.stateDir, sb.instance)], timeoutMs: 60_000 },
    );
  });
  // Each step runs even when one before it (or the test) failed; the first failure is thrown at the end.
  after(async function () {
    const steps = [() => ctl?.stop(), () => sb?.destroy(), () => other?.destroy()];
    const failed: unknown[] = [];
    for (const step of steps) await Promise.resolve(step()).catch((err: unknown) => failed.push(err));
    if (failed.length > 0) throw failed[0];
  });

  it('the socket is mode 0600; GET is the get -o json item; exec with cmd, input, cwd, env, timeout; output past --api-max-output cut and said so (curl and Node)', async function () {
    expect((await fs.stat(socket)).mode & 0o777).to.equal(0o600);
    const item = await curl(socket, ['http://berth/v1/attempts/s1']);
    expect(item.status).to.equal(200);
    const doc = JSON.parse(item.body) as { kind: string; metadata: { name: string }; status: { phase: string } };
    expect([doc.kind, doc.metadata.name, doc.status.phase]).to.deep.equal(['Attempt', 's1', 'Running']);
    const e = await curl(socket, [
      '-XPOST',
      'http://berth/v1/attempts/s1/exec',
      '-d',
      JSON.stringify({ cmd: ['sh', '-c', 'cat; pwd; echo "$GREETING" >&2; exit 5'], input: 'in\n', cwd: '/tmp', env: { GREETING: 'hello' }, timeout: 30 }),
    ]);
    expect(e.status).to.equal(200);
    expect(JSON.parse(e.body)).to.deep.equal({ exitCode: 5, stdout: 'in\n/tmp\n', stderr: 'hello\n', truncated: false });
    const big = (await exec('s1', { cmd: ['sh', '-c', 'head -c 100000 /dev/zero | tr "\\000" a; echo done >&2'] })).json();
    expect(big).to.include({ exitCode: 0, truncated: true, stderr: 'done\n' });
    expect((big.stdout as string).length).to.equal(4096);
    const t = (await exec('s1', { cmd: ['sleep', '60'], timeout: 1 })).json();
    expect(t).to.include({ exitCode: 124, timedOut: true, killed: true });
    const bad = await exec('s1', { cmd: 'ls' });
    expect([bad.status, bad.json().error]).to.deep.equal([400, 'cmd: a non-empty list of strings expected (["sh", "-c", "..."])']);
  });

  it('files: PUT then GET the same bytes (folders on the way made, the attempt user owns them); a folder, a link or a missing file is refused with why', async function () {
    const bytes = randomBytes(3 * 1024 * 1024 + 17);
    const put = await request({ socket, method: 'PUT', path: '/v1/attempts/s2/files?path=/workspace/deep/er/blob.bin', body: bytes });
    expect([put.status, put.json()]).to.deep.equal([201, { path: '/workspace/deep/er/blob.bin', bytes: bytes.length }]);
    const got = await request({ socket, method: 'GET', path: '/v1/attempts/s2/files?path=/workspace/deep/er/blob.bin' });
    expect(got.status).to.equal(200);
    expect(createHash('sha256').update(got.body).digest('hex')).to.equal(createHash('sha256').update(bytes).digest('hex'));
    const viaCurl = await curl(socket, ['-XPUT', '--data-binary', 'written by curl', 'http://berth/v1/attempts/s2/files?path=/workspace/c.txt']);
    expect(viaCurl.status).to.equal(201);
    expect((await curl(socket, ['http://berth/v1/attempts/s2/files?path=/workspace/c.txt'])).body).to.equal('written by curl');
    await exec('s2', { cmd: ['ln', '-s', '/etc/passwd', '/workspace/link'] });
    const link = await request({ socket, method: 'GET', path: '/v1/attempts/s2/files?path=/workspace/link' });
    expect([link.status, link.json().error]).to.deep.equal([400, '/workspace/link is a link to /etc/passwd; berth never follows one, not a regular file']);
    expect((await request({ socket, method: 'GET', path: '/v1/attempts/s2/files?path=/workspace/deep' })).status).to.equal(400);
    expect((await request({ socket, method: 'GET', path: '/v1/attempts/s2/files?path=/workspace/none' })).status).to.equal(404);
    expect((await request({ socket, method: 'PUT', path: '/v1/attempts/s2/files?path=/workspace/c.txt/under', body: 'x' })).status).to.equal(409);
  });

  it('hostile: another instance’s attempt is not found; a path that climbs, a 2 GiB body, a wrong or no token on TCP are refused', async function () {
    const theirs = await request({ socket, method: 'GET', path: '/v1/attempts/theirs' });
    expect([theirs.status, theirs.json().error]).to.deep.equal([404, `attempt theirs not found in instance ${sb.instance}`]);
    expect((await exec('theirs', { cmd: ['true'] })).status).to.equal(404);
    for (const p of ['/workspace/../etc/passwd', '../../etc/passwd', '/workspace/a/../../x', 'relative']) {
      const r = await request({ socket, method: 'GET', path: `/v1/attempts/s1/files?path=${encodeURIComponent(p)}` });
      expect(r.status, p).to.equal(400);
      expect((await request({ socket, method: 'PUT', path: `/v1/attempts/s1/files?path=${encodeURIComponent(p)}`, body: 'x' })).status, p).to.equal(400);
    }
    expect((await request({ socket, method: 'GET', path: '/v1/attempts/..%2F..%2Fetc' })).status).to.equal(400);
    // a 2 GiB body: refused from its declared length, before a byte of it is read
    for (const [method, p] of [
      ['POST', '/v1/attempts/s1/exec'],
      ['PUT', '/v1/attempts/s1/files?path=/workspace/huge'],
      ['POST', '/v1/attempts'],
    ] as const) {
      const huge = await new Promise<{ status: number; sent: number }>((resolve, reject) => {
        let sent = 0;
        const req = http.request({ socketPath: socket, method, path: p, headers: { 'content-length': String(2 * 1024 ** 3) } }, (res) => {
          res.resume();
          resolve({ status: res.statusCode ?? 0, sent });
          req.destroy();
        });
        req.on('error', (err) => (sent > 0 ? undefined : reject(err)));
        const chunk = Buffer.alloc(1024 * 1024);
        const pump = () => {
          while (sent < 2 * 1024 ** 3 && req.write(chunk)) sent += chunk.length;
        };
        req.on('drain', pump);
        pump();
      });
      expect(huge.status, p).to.equal(413);
      expect(huge.sent, p).to.be.below(256 * 1024 ** 2);
    }
    // the same without a declared length: cut off at the bound
    const chunked = await new Promise<number>((resolve, reject) => {
      const req = http.request({ socketPath: socket, method: 'POST', path: '/v1/attempts/s1/exec', headers: { 'transfer-encoding': 'chunked' } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
        req.destroy();
      });
      req.on('error', () => undefined);
      let sent = 0;
      const chunk = Buffer.alloc(1024 * 1024, 0x20);
      const pump = () => {
        while (sent < API.maxBodyBytes * 4 && req.write(chunk)) sent += chunk.length;
      };
      req.on('drain', pump);
      pump();
      setTimeout(() => reject(new Error('no answer to a chunked body past the bound')), 30_000).unref();
    });
    expect(chunked).to.equal(413);
    // TCP: the token or 401
    expect((await request({ port, method: 'GET', path: '/v1/attempts/s1' })).status).to.equal(401);
    expect((await request({ port, method: 'GET', path: '/v1/attempts/s1', headers: { authorization: 'Bearer not-the-token' } })).status).to.equal(401);
    const ok = await request({
      port,
      method: 'POST',
      path: '/v1/attempts/s1/exec',
      headers: { authorization: `Bearer ${token}` },
      body: JSON.stringify({ cmd: ['echo', 'tcp'] }),
    });
    expect([ok.status, ok.json().stdout]).to.deep.equal([200, 'tcp\n']);
  });

  it('a client that never reads its answer is cut off (the API answers others meanwhile); a client that goes away ends its exec in the container', async function () {
    await exec('s1', { cmd: ['sh', '-c', 'head -c 67108864 /dev/urandom > /workspace/big'] });
    const never = net.connect(socket);
    await new Promise<void>((r) => never.once('connect', () => r()));
    never.pause();
    never.write('GET /v1/attempts/s1/files?path=/workspace/big HTTP/1.1\r\nHost: berth\r\n\r\n');
    // answered meanwhile
    expect((await exec('s2', { cmd: ['echo', 'still here'] })).json().stdout).to.equal('still here\n');
    // A paused socket reads nothing, so it cannot see the server end it: the idle bound (1.5 s
    // here) must pass first; what is read after it tells whether the answer was cut off (a
    // client cut off gets what the socket buffers held, far from the 64 MiB, then the end).
    await new Promise((r) => setTimeout(r, 4 * 1500));
    let got = 0;
    never.on('data', (c: Buffer) => (got += c.length));
    await new Promise<void>((r) => {
      never.once('close', () => r());
      never.resume();
    });
    expect(got)
      .to.be.above(0)
      .and.below(64 * 1024 * 1024);
    // the exec's client goes away: the command is killed in the container
    const gone = http.request({ socketPath: socket, method: 'POST', path: '/v1/attempts/s1/exec' });
    gone.on('error', () => undefined);
    gone.end(JSON.stringify({ cmd: ['sleep', '313'] }));
    const ps = async () => ((await exec('s1', { cmd: ['ps', '-o', 'args'] })).json().stdout as string).includes('sleep 313');
    await waitFor('the exec under way', async () => (await ps()) || undefined, { timeoutMs: 20_000 });
    gone.destroy();
    await waitFor('the exec killed once its client went away', async () => !(await ps()) || undefined, { timeoutMs: 20_000 });
  });

  it('100 execs at once all answer; POST /v1/attempts makes a sandbox that runs, release ends it as an exit would, DELETE removes what the API made only', async function () {
    const many = await Promise.all(
      Array.from({ length: 100 }, (_, i) => exec(i % 2 ? 's1' : 's2', { cmd: ['sh', '-c', 'sleep 1; echo "$N"'], env: { N: String(i) } })),
    );
    expect(many.map((a) => a.json().stdout)).to.deep.equal(Array.from({ length: 100 }, (_, i) => `${i}\n`));
    const made = await curl(socket, ['-XPOST', '--data-binary', sandboxSpec('made'), 'http://berth/v1/attempts']);
    expect([made.status, JSON.parse(made.body)]).to.deep.equal([
      201,
      { name: 'made', kind: 'Attempt', file: `${API.specsFolder}/made.yaml`, attempts: ['made'] },
    ]);
    expect((await request({ socket, method: 'POST', path: '/v1/attempts', body: sandboxSpec('made') })).status).to.equal(409);
    const invalid = await request({
      socket,
      method: 'POST',
      path: '/v1/attempts',
      body: sandboxSpec('bad').replace('sandbox: true', 'sandbox: true\n  command: [x]'),
    });
    expect(invalid.status).to.equal(400);
    expect(JSON.stringify(invalid.json().errors)).to.include('spec.sandbox');
    await waitFor('the made sandbox Running', async () => (await sb.status('made'))?.phase === 'Running' || undefined, {
      instance: sb.instance,
      timeoutMs: 60_000,
    });
    expect((await exec('made', { cmd: ['sh', '-c', 'echo 1 > /workspace/x'] })).json().exitCode).to.equal(0);
    const rel = await request({ socket, method: 'POST', path: '/v1/attempts/made/release', ...json({ exitCode: 2 }) });
    expect([rel.status, rel.json().released]).to.deep.equal([200, true]);
    const rec = await sb.status('made');
    expect([rec?.phase, rec?.exitCode, rec?.touched?.execs]).to.deep.equal(['Failed', 2, 1]);
    expect((await request({ socket, method: 'POST', path: '/v1/attempts/made/release', ...json({}) })).status).to.equal(409);
    expect((await request({ socket, method: 'DELETE', path: '/v1/attempts/s1' })).status).to.equal(409);
    expect((await request({ socket, method: 'DELETE', path: '/v1/attempts/made' })).status).to.equal(200);
    await waitFor('the made attempt gone', async () => (await sb.status('made')) === undefined || undefined, { instance: sb.instance, timeoutMs: 30_000 });
    expect((await request({ socket, method: 'DELETE', path: '/v1/attempts/made' })).status).to.equal(404);
  });
});
