/** Pure parts of the swarm backend: the hardening probe's report, and results brought home without following links. */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { extract, pack } from 'tar-stream';
import { abandonedProbe, parseProbe } from '../../../src/backend/swarm/probe';
import { sharedNetworkList } from '../../../src/backend/swarm/networks';
import { SwarmRuns } from '../../../src/backend/swarm/runs';
import { serviceBody } from '../../../src/engine/swarm/services';
import { LABELS, SWARM } from '../../../src/constants';
import { extractResults } from '../../../src/backend/swarm/results';

const PRIVATE = '9:name=systemd:/\n1:cpu:/\n0::/\n';
const HOST = '9:name=systemd:/docker/abc\n0::/docker/abc\n';

describe('swarm backend: hardening probe report', () => {
  it('reads NoNewPrivs and whether every cgroup path is the root', () => {
    const line = (nnp: string, cgroup: string) => `noise\nBERTH-PROBE ${JSON.stringify({ nnp, cgroup })}\n`;
    expect(parseProbe(line('1', PRIVATE))).to.deep.equal({ noNewPrivileges: true, privateCgroupns: true });
    expect(parseProbe(line('0', PRIVATE))).to.deep.equal({ noNewPrivileges: false, privateCgroupns: true });
    expect(parseProbe(line('1', HOST))).to.deep.equal({ noNewPrivileges: true, privateCgroupns: false });
    expect(parseProbe('nothing here').error).to.equal('the probe printed no report');
  });
});

describe('swarm backend: a probe service left by a killed berth', () => {
  const at = Date.parse('2026-01-01T00:00:00Z');
  const probe = (owner: string, ageMs: number) => ({
    id: 'x',
    name: 'berth-probe-x',
    labels: { [SWARM.probeOwnerLabel]: owner },
    image: '',
    networks: [],
    createdAt: new Date(at - ageMs).toISOString(),
  });

  it("is abandoned when its owner is a process of this host that has ended, or when it is older than twice a probe's time", () => {
    expect(abandonedProbe(probe(`${os.hostname()}/${process.pid}`, 1000), at)).to.equal(false);
    expect(abandonedProbe(probe(`${os.hostname()}/${process.pid}`, 2 * SWARM.probeTimeoutMs + 1), at)).to.equal(true);
    expect(abandonedProbe(probe(`other-host/${process.pid}`, 1000), at)).to.equal(false);
    expect(abandonedProbe(probe('other-host/1', 2 * SWARM.probeTimeoutMs - 1), at)).to.equal(false);
    expect(abandonedProbe(probe('', 2 * SWARM.probeTimeoutMs + 1), at)).to.equal(true);
  });
});

describe('swarm backend: results brought home', () => {
  async function tarOf(entries: { name: string; type?: 'file' | 'directory' | 'symlink'; body?: string; linkname?: string }[]): Promise<Readable> {
    const p = pack();
    for (const e of entries) {
      await new Promise<void>((resolve, reject) =>
        p.entry({ name: e.name, type: e.type ?? 'file', ...(e.linkname ? { linkname: e.linkname } : {}) }, e.body ?? '', (err) =>
          err ? reject(err) : resolve(),
        ),
      );
    }
    p.finalize();
    return p as unknown as Readable;
  }

  it('writes files and folders under the results folder, keeps links as links, and never writes through one or outside', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-results-'));
    const outside = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-outside-'));
    try {
      const into = path.join(dir, 'results');
      await extractResults(
        await tarOf([
          { name: 'results/', type: 'directory' },
          { name: 'results/a.txt', body: 'a' },
          { name: 'results/sub/', type: 'directory' },
          { name: 'results/sub/b.txt', body: 'b' },
          { name: 'results/out', type: 'symlink', linkname: outside },
          { name: 'results/out/evil.txt', body: 'evil' },
          { name: 'results/../escape.txt', body: 'evil' },
          { name: 'other/c.txt', body: 'c' },
        ]),
        'results',
        into,
      );
      expect(await fs.readFile(path.join(into, 'a.txt'), 'utf8')).to.equal('a');
      expect(await fs.readFile(path.join(into, 'sub/b.txt'), 'utf8')).to.equal('b');
      expect(await fs.readlink(path.join(into, 'out'))).to.equal(outside);
      expect(await fs.readdir(outside)).to.deep.equal([]);
      expect((await fs.readdir(dir)).sort()).to.deep.equal(['results']);
      expect((await fs.readdir(into)).sort()).to.deep.equal(['a.txt', 'out', 'sub']);
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
      await fs.rm(outside, { recursive: true, force: true });
    }
  });
});

describe('swarm backend: a fixture streams into the node, its secrets are kept aside', () => {
  it('hands the node engine the archive as a stream that starts before the source is read to its end, without the secrets', async () => {
    const MiB = 1 << 20;
    const src = pack();
    let read = 0;
    const counted = src.pipe(
      new PassThrough({
        transform(c: Buffer, _e, cb) {
          read += c.length;
          cb(null, c);
        },
      }),
    );
    void (async () => {
      src.entry({ name: 'workspace/', type: 'directory' });
      const big = src.entry({ name: 'workspace/big.bin', size: 32 * MiB }, () => undefined);
      for (let i = 0; i < 32 * 16; i++) if (!big.write(Buffer.alloc(MiB / 16, i % 251))) await new Promise<void>((r) => big.once('drain', () => r()));
      big.end(() => undefined);
      src.entry({ name: 'run/', type: 'directory' });
      src.entry({ name: 'run/secrets/', type: 'directory' });
      src.entry({ name: 'run/secrets/token', mode: 0o400, uid: 7, gid: 8 }, 'the-value');
      src.finalize();
    })();
    let readAtFirstByte = -1;
    let receivedBuffer = false;
    const names: string[] = [];
    const engine = {
      containers: {
        inspect: () => Promise.resolve({ labels: { [LABELS.managed]: 'true', [LABELS.instance]: 'i', [LABELS.attempt]: 'a' } }),
        putArchive: async (_name: string, _path: string, tar: Buffer | Readable) => {
          receivedBuffer = Buffer.isBuffer(tar);
          const ex = extract();
          ex.on('entry', (h, s, next) => {
            names.push(h.name);
            s.on('data', () => {
              if (readAtFirstByte < 0) readAtFirstByte = read;
            });
            s.on('end', () => next());
          });
          await pipeline(Buffer.isBuffer(tar) ? Readable.from([tar]) : tar, ex);
        },
      },
    };
    const created: { name: string; data: string; labels: Record<string, string> }[] = [];
    const swarm = {
      secrets: {
        create: (name: string, data: Buffer, labels: Record<string, string>) => Promise.resolve(void created.push({ name, data: data.toString(), labels })),
      },
    };
    const pool = { reachable: () => Promise.resolve([{ node: { id: 'n1' }, engine }]) };
    const runs = new SwarmRuns(swarm as never, pool as never);
    await runs.putArchive('r@n1', '/', counted);
    expect(receivedBuffer).to.equal(false);
    expect(names).to.deep.equal(['workspace/', 'workspace/big.bin']);
    expect(readAtFirstByte, 'bytes of the source read when the node got the first').to.be.within(0, 8 * MiB);
    expect(created.map((c) => [c.data, c.labels[SWARM.secretFileLabel], c.labels[SWARM.runLabel]])).to.deep.equal([['the-value', 'token:7:8:256', 'r@n1']]);
  });
});

describe('swarm backend: one list of the manager networks serves a pass', () => {
  it('is asked again once SWARM.nodesFreshMs passed on the clock it was given, or after a change through it', async () => {
    let t = 1_000_000;
    let lists = 0;
    const inner = {
      list: async () => (lists++, [{ id: 'n1', name: 'a', labels: { x: '1' }, internal: true }]),
      inspect: async () => ({}),
      create: async () => 'n2',
      connect: async () => undefined,
      remove: async () => true,
    };
    const shared = sharedNetworkList(inner as never, () => t);
    expect((await shared.list(['x=1'])).map((n) => n.id)).to.deep.equal(['n1']);
    expect(await shared.list(['x=2'])).to.deep.equal([]);
    expect(lists).to.equal(1);
    t += SWARM.nodesFreshMs + 1;
    await shared.list([]);
    expect(lists).to.equal(2);
    await shared.create({ name: 'b', labels: {}, internal: true });
    await shared.list([]);
    expect(lists).to.equal(3);
  });
});

describe("swarm backend: a run's service runs what its prepared container would", () => {
  const base = {
    name: 'r',
    labels: {},
    containerLabels: {},
    image: 'img',
    env: [],
    workingDir: '/workspace',
    nodeId: 'n1',
    networks: [],
    mounts: [],
    secrets: [],
    capDrop: [],
    capAdd: [],
    init: true,
    readonlyRootfs: false,
  };
  const spec = (body: Record<string, unknown>) => (body.TaskTemplate as { ContainerSpec: Record<string, unknown> }).ContainerSpec;

  it("an entrypoint (the image's, or a sandbox's helper) is the service's Command with the command as its Args; without one, the command is the Command", () => {
    const sandbox = spec(serviceBody({ ...base, entrypoint: ['/.berth/berth-helper'], cmd: ['pause'] }));
    expect([sandbox.Command, sandbox.Args]).to.deep.equal([['/.berth/berth-helper'], ['pause']]);
    const image = spec(serviceBody({ ...base, entrypoint: ['/usr/bin/node', '/app/x.js'], cmd: null }));
    expect([image.Command, image.Args]).to.deep.equal([['/usr/bin/node', '/app/x.js'], undefined]);
    const plain = spec(serviceBody({ ...base, cmd: ['sh', '-c', 'true'] }));
    expect([plain.Command, plain.Args]).to.deep.equal([['sh', '-c', 'true'], undefined]);
    const helper = spec(serviceBody({ ...base, cmd: null, mounts: [{ source: 'r-berth', target: '/.berth', readOnly: true, noCopy: true }] }));
    expect(helper.Mounts).to.deep.equal([{ Type: 'volume', Source: 'r-berth', Target: '/.berth', ReadOnly: true, VolumeOptions: { NoCopy: true } }]);
  });
});
