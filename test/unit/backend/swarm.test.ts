/** Pure parts of the swarm backend: the hardening probe's report, and results brought home without following links. */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pack } from 'tar-stream';
import { abandonedProbe, parseProbe } from '../../../src/backend/swarm/probe';
import { SWARM } from '../../../src/constants';
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
  const probe = (owner: string, ageMs: number) => ({ id: 'x', name: 'berth-probe-x', labels: { [SWARM.probeOwnerLabel]: owner }, image: '', networks: [], createdAt: new Date(at - ageMs).toISOString() });

  it('is abandoned when its owner is a process of this host that has ended, or when it is older than twice a probe\'s time', () => {
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
        p.entry({ name: e.name, type: e.type ?? 'file', ...(e.linkname ? { linkname: e.linkname } : {}) }, e.body ?? '', (err) => (err ? reject(err) : resolve())),
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
