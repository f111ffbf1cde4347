/**
 * The egress proxy image on the real engine, laid out the way berth will run it: a client on
 * an `--internal` network whose only way out is the proxy, which also sits on an egress
 * network holding an "allowed" and a "denied" HTTP server. The client reaches `allowed`
 * through the proxy (plain HTTP and CONNECT), gets 403 for `denied`, and cannot reach anything
 * directly. Readiness is read from container logs (the proxy's `listening` line); no sleeps.
 * Everything made here carries this test run's label and is removed in `after`.
 */
import { expect } from 'chai';
import type Dockerode from 'dockerode';
import { PassThrough } from 'node:stream';
import { PROXY_IMAGE, parseListeningLine } from '../../src/proxy/contract';
import { docker, requireEngine, TEST_IMAGE, TEST_LABEL, TEST_RUN } from '../support/engine';

const tag = `${TEST_RUN}-egress-proxy`;
const labels = { [TEST_LABEL]: TEST_RUN, 'dev.berth.test-case': tag };
const INTERNAL = `${tag}-internal`;
const EGRESS = `${tag}-egress`;

/** A tiny HTTP server run with the proxy image's node: prints `ready` once it listens. */
const SERVER_JS =
  "require('http').createServer((q,s)=>s.end(process.env.BODY)).listen(8080,()=>console.log('ready'));" + "process.on('SIGTERM',()=>process.exit(0));";

async function createNetwork(name: string, internal: boolean): Promise<void> {
  await docker.createNetwork({ Name: name, Driver: 'bridge', Internal: internal, CheckDuplicate: true, Labels: labels });
}

async function createContainer(
  name: string,
  opts: { image: string; net: string; aliases: string[]; entrypoint?: string[]; cmd?: string[]; env?: string[] },
): Promise<Dockerode.Container> {
  return docker.createContainer({
    name,
    Image: opts.image,
    ...(opts.entrypoint ? { Entrypoint: opts.entrypoint } : {}),
    ...(opts.cmd ? { Cmd: opts.cmd } : {}),
    Env: opts.env ?? [],
    Labels: labels,
    HostConfig: { NetworkMode: opts.net },
    NetworkingConfig: { EndpointsConfig: { [opts.net]: { Aliases: opts.aliases } } },
  });
}

/** Follows a container's stdout until a line satisfies `match`; rejects if the log ends first. */
async function waitForLine(c: Dockerode.Container, match: (line: string) => boolean): Promise<string> {
  const stream = (await c.logs({ follow: true, stdout: true, stderr: true })) as NodeJS.ReadableStream & { destroy(): void };
  const out = new PassThrough();
  const err = new PassThrough();
  docker.modem.demuxStream(stream, out, err);
  let text = '';
  let errText = '';
  err.on('data', (b: Buffer) => (errText += b.toString()));
  return new Promise((resolve, reject) => {
    out.on('data', (b: Buffer) => {
      text += b.toString();
      const line = text.split('\n').find((l) => match(l));
      if (line !== undefined) {
        stream.destroy();
        resolve(line);
      }
    });
    stream.on('end', () => reject(new Error(`container log ended before the expected line; stdout: ${text} stderr: ${errText}`)));
    stream.on('error', reject);
  });
}

/** Splits a non-follow multiplexed log buffer into stdout and stderr. */
function demux(buf: Buffer): { stdout: string; stderr: string } {
  const parts = { stdout: [] as Buffer[], stderr: [] as Buffer[] };
  for (let i = 0; i + 8 <= buf.length;) {
    const size = buf.readUInt32BE(i + 4);
    (buf[i] === 2 ? parts.stderr : parts.stdout).push(buf.subarray(i + 8, i + 8 + size));
    i += 8 + size;
  }
  return { stdout: Buffer.concat(parts.stdout).toString(), stderr: Buffer.concat(parts.stderr).toString() };
}

let clients = 0;
/** Runs a busybox shell command on the internal network only; returns its exit code and output. */
async function runClient(script: string, env: string[] = []): Promise<{ code: number; stdout: string; stderr: string }> {
  const c = await createContainer(`${tag}-client-${++clients}`, {
    image: TEST_IMAGE,
    net: INTERNAL,
    aliases: [],
    cmd: ['sh', '-c', script],
    env,
  });
  try {
    await c.start();
    const { StatusCode } = (await c.wait()) as { StatusCode: number };
    const logs = demux((await c.logs({ follow: false, stdout: true, stderr: true })) as Buffer);
    return { code: StatusCode, ...logs };
  } finally {
    await c.remove({ force: true });
  }
}

async function removeOurs(): Promise<void> {
  const filters = JSON.stringify({ label: [`dev.berth.test-case=${tag}`] });
  const cs = await docker.listContainers({ all: true, filters });
  await Promise.all(
    cs.map((c) =>
      docker
        .getContainer(c.Id)
        .remove({ force: true })
        .catch(() => undefined),
    ),
  );
  const ns = await docker.listNetworks({ filters });
  await Promise.all(
    ns.map((n) =>
      docker
        .getNetwork(n.Id)
        .remove()
        .catch(() => undefined),
    ),
  );
}

describe('egress proxy image (real engine)', function () {
  this.timeout(60000);
  const PROXY = 'http_proxy=http://proxy:3128';
  let proxy: Dockerode.Container;
  let allowedIp = '';

  before(async function () {
    await requireEngine();
    try {
      await docker.getImage(PROXY_IMAGE).inspect();
    } catch {
      throw new Error(`proxy image ${PROXY_IMAGE} is missing: run ./scripts/images.sh (make images does)`);
    }
    await createNetwork(INTERNAL, true);
    await createNetwork(EGRESS, false);
    const servers = await Promise.all(
      (['allowed', 'denied'] as const).map(async (role) => {
        const c = await createContainer(`${tag}-${role}`, {
          image: PROXY_IMAGE,
          net: EGRESS,
          aliases: [role],
          entrypoint: ['/usr/bin/node', '-e', SERVER_JS],
          env: [`BODY=${role}-body`],
        });
        const ready = c.start().then(() => waitForLine(c, (l) => l === 'ready'));
        return { c, ready };
      }),
    );
    proxy = await createContainer(`${tag}-proxy`, {
      image: PROXY_IMAGE,
      net: INTERNAL,
      aliases: ['proxy'],
      env: ['BERTH_EGRESS_ALLOW=allowed:8080'],
    });
    await docker.getNetwork(EGRESS).connect({ Container: proxy.id, EndpointConfig: { Aliases: ['proxy'] } });
    await proxy.start();
    const line = await waitForLine(proxy, (l) => parseListeningLine(l) !== undefined);
    expect(parseListeningLine(line)).to.deep.equal({ event: 'listening', port: 3128, allow: ['allowed:8080'] });
    await Promise.all(servers.map((s) => s.ready));
    const info = await (servers[0] as { c: Dockerode.Container }).c.inspect();
    allowedIp = info.NetworkSettings.Networks[EGRESS]?.IPAddress ?? '';
    expect(allowedIp).to.match(/^\d+\.\d+\.\d+\.\d+$/);
  });

  after(async function () {
    await removeOurs();
  });

  it('runs as nobody, on exactly the internal and the egress network', async () => {
    const info = await proxy.inspect();
    expect(info.Config.User).to.equal('65534');
    expect(Object.keys(info.NetworkSettings.Networks).sort()).to.deep.equal([EGRESS, INTERNAL].sort());
  });

  it('forwards plain HTTP to an allowed target', async () => {
    const r = await runClient('wget -q -O - http://allowed:8080/', [PROXY]);
    expect(r, r.stderr).to.include({ code: 0, stdout: 'allowed-body' });
  });

  it('refuses a target that is not in the allowlist with 403', async () => {
    const r = await runClient('wget -q -O - http://denied:8080/', [PROXY]);
    expect(r.code).to.not.equal(0);
    expect(r.stdout).to.equal('');
    expect(r.stderr).to.match(/403/);
  });

  it('refuses the allowed host on another port', async () => {
    const r = await runClient('wget -q -O - http://allowed:8081/', [PROXY]);
    expect(r.code).to.not.equal(0);
    expect(r.stderr).to.match(/403/);
  });

  it('tunnels CONNECT to an allowed target and refuses others', async () => {
    const connect = (target: string): string =>
      `printf 'CONNECT ${target} HTTP/1.1\\r\\nHost: ${target}\\r\\n\\r\\nGET / HTTP/1.0\\r\\nHost: ${target}\\r\\n\\r\\n' | nc proxy 3128`;
    const ok = await runClient(connect('allowed:8080'));
    expect(ok.stdout).to.match(/^HTTP\/1\.1 200 Connection Established\r\n\r\nHTTP\/1\.1 200 OK\r\n/);
    expect(ok.stdout).to.match(/allowed-body$/);
    const no = await runClient(connect('denied:8080'));
    expect(no.stdout).to.match(/^HTTP\/1\.1 403 Forbidden\r\n[\s\S]*denied:8080 is not in the egress allowlist/);
    expect(no.stdout).to.not.include('denied-body');
  });

  it('leaves no direct way out of the internal network, by name or by address', async () => {
    // Neither the server's name nor its address gets anywhere from the internal network: the
    // name does not resolve there, and the engine drops packets to the address. Absence is
    // proved with a 3 s bound on each attempt (run side by side), not by waiting for an event.
    const [byName, byIp] = await Promise.all([
      // `|| exit 1` keeps sh as PID 1 (a lone command would be exec'd as PID 1, which TERM
      // from `timeout` cannot end).
      runClient('busybox timeout 3 wget -q -O - http://allowed:8080/ || exit 1'),
      runClient(`printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 3 ${allowedIp} 8080`),
    ]);
    expect(byName.code).to.not.equal(0);
    expect(byName.stdout).to.equal('');
    expect(byIp.code).to.not.equal(0);
    expect(byIp.stdout).to.equal('');
    expect(byIp.stderr).to.match(/timed out|unreachable/);
  });

  it('logged every decision as JSON, then exits 0 on docker stop', async () => {
    await proxy.stop({ t: 10 });
    const info = await proxy.inspect();
    expect(info.State.ExitCode).to.equal(0);
    const { stdout, stderr } = demux((await proxy.logs({ follow: false, stdout: true, stderr: true })) as Buffer);
    expect(stderr).to.equal('');
    const records = stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(records[0]).to.deep.equal({ event: 'listening', port: 3128, allow: ['allowed:8080'] });
    const decisions = records.filter((r) => r.event === 'decision');
    expect(decisions.map((d) => [d.method, d.target, d.allowed, d.status])).to.deep.include.members([
      ['GET', 'allowed:8080', true, 200],
      ['GET', 'denied:8080', false, 403],
      ['GET', 'allowed:8081', false, 403],
      ['CONNECT', 'allowed:8080', true, 200],
      ['CONNECT', 'denied:8080', false, 403],
    ]);
    const closes = records.filter((r) => r.event === 'close');
    expect(closes.length).to.equal(decisions.filter((d) => d.allowed).length);
  });
});
