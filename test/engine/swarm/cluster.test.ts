/**
 * The test swarm itself: two engines of their own joined into one swarm, the daemons hardened,
 * the test images on both, and nothing left behind once it is down.
 */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import { HARDENING_FLAGS, TestSwarm, twoNodeSwarm } from '../../support/swarm';

describe('test swarm (two dockerds in network namespaces of their own)', function () {
  this.timeout(120_000);

  it('has a manager and a worker, both ready, hardened, with the test images', async () => {
    const s = await twoNodeSwarm();
    console.log(`      swarm up in ${s.startMs} ms`);
    const nodes = (await s.manager.docker.listNodes()) as { ID: string; Spec: { Role: string }; Status: { State: string } }[];
    expect(nodes.map((n) => n.Spec.Role).sort()).to.deep.equal(['manager', 'worker']);
    expect(nodes.map((n) => n.ID).sort()).to.deep.equal(s.nodes.map((n) => n.id).sort());
    for (const n of s.nodes) {
      const argv = (await fs.readFile(`/proc/${n.pid}/cmdline`, 'utf8')).split('\0').slice(0, -1);
      expect(argv.slice(0, 1).concat(argv.slice(-3)), `node ${n.index}`).to.deep.equal(['dockerd', ...HARDENING_FLAGS]);
      const tags = ((await n.docker.listImages()) as { RepoTags: string[] | null }[]).flatMap((i) => i.RepoTags ?? []);
      expect(tags).to.include.members(['berth/busybox:local', 'berth/egress-proxy:local']);
    }
  });

  it('an unhardened node starts without the flags, and a swarm leaves no trace once down', async () => {
    const s = new TestSwarm('bare', { nodes: [{ hardened: false }], images: ['berth/busybox:local'] });
    await s.up();
    try {
      const argv = (await fs.readFile(`/proc/${s.manager.pid}/cmdline`, 'utf8')).split('\0');
      expect(argv[0]).to.equal('dockerd');
      expect(argv).not.to.include('--no-new-privileges');
    } finally {
      await s.down();
    }
    expect(await s.traces()).to.deep.equal([]);
  });

  it('a swarm that cannot start says why, loudly, and leaves nothing behind', async () => {
    const s = new TestSwarm('broken', { nodes: [{}], images: ['berth/no-such-image:local'] });
    let err: Error | undefined;
    await s.up().catch((e: Error) => (err = e));
    expect(err?.message).to.match(/^the test swarm could not start \(1 nodes\): .*no-such-image/s);
    expect(await s.traces()).to.deep.equal([]);
  });
});
