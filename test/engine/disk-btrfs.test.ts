/**
 * resources.disk enforced by the engine: a private engine whose data root is a btrfs file system
 * the test makes on a loop device (Debian's btrfs-progs: scripts/fs-up.sh; test/support/loop-fs.ts),
 * with the btrfs storage driver. btrfs caps a container's writable layer itself (a qgroup limit
 * per subvolume; the driver turns the file system's quotas on at the first size asked), so berth
 * asks for the size (StorageOpt size), attests it, and the attempt meets EDQUOT at its limit
 * instead of being measured past it. (xfs with project quotas is the other way overlay2 caps a
 * layer; this machine's kernel has no XFS quota support: disk-xfs.test.ts.) The results folder is
 * not in the engine's cap: berth still measures it against the same limit. Everything is torn
 * down after, also on failure: the engine by its pid, the mount, the loop device, the files.
 */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { createDockerEngine } from '../../src/engine/docker';
import { startController } from '../support/controller';
import { requireEngine } from '../support/engine';
import { engineOnLoopFs } from '../support/loop-fs';
import { waitFor } from '../support/wait';

const MiB = 1024 * 1024;
const LIMIT = 64 * MiB;
const DISK = '  resources: {disk: 64Mi}\n';

describe('resources.disk enforced by the engine (btrfs data root, private engine on a loop device)', function () {
  this.timeout(180_000);
  before(requireEngine);

  const { engine: pe, sandbox } = engineOnLoopFs('btrfs', 'btrfs');

  it('asks the engine for the size and attests it: the attempt meets EDQUOT at its limit and ends DiskLimitExceeded; results are still measured; a neighbour succeeds', async function () {
    const s = sandbox();
    const info = await pe.docker.info();
    expect(info.Driver).to.equal('btrfs');
    // writes into its root file system until the engine refuses (dd ends non-zero at the cap)
    await s.write('capped.yaml', s.attempt('capped', 'dd if=/dev/zero of=/fill bs=1M', DISK));
    // the results folder is outside the engine's cap: measured by berth against the same limit
    await s.write(
      'results.yaml',
      s.attempt('results', 'i=0; while :; do dd if=/dev/zero of=/results/f$i bs=1M count=1 2>/dev/null; i=$((i+1)); sleep 0.02; done', DISK),
    );
    await s.write('roomy.yaml', s.attempt('roomy', 'dd if=/dev/zero of=/part bs=1M count=8 2>/dev/null && echo wrote', DISK));
    const engine = createDockerEngine(pe.docker);
    const ctl = startController(s, { resync: 600, diskInterval: 1000 }, engine);
    const attempts = path.join(s.stateDir, s.instance, 'attempts');
    const ended = (name: string) =>
      waitFor(
        `${name} finished`,
        async () => {
          const r = await s.status(name);
          return r && ['Succeeded', 'Failed', 'TimedOut'].includes(r.phase) ? r : undefined;
        },
        { dirs: [attempts], timeoutMs: 90_000 },
      );
    try {
      const [capped, results, roomy] = await Promise.all([ended('capped'), ended('results'), ended('roomy')]);
      // the engine's cap: EDQUOT in the attempt's own output, the layer full when it ended
      expect([capped.phase, capped.reason], capped.message).to.deep.equal(['Failed', 'DiskLimitExceeded']);
      expect(capped.message).to.match(/^exited with code 1 with its writable layer full: \d+(\.\d)? MiB of the 64 MiB the engine caps it at/);
      expect(capped.disk).to.deep.equal({ bytes: LIMIT, source: 'spec', enforcedBy: 'engine' });
      const logs = await fs.readFile(path.join(capped.resultsDir as string, '..', 'logs.txt'), 'utf8');
      expect(logs).to.match(/Disk quota exceeded|No space left on device/);
      // busybox dd counts whole 1 MiB records written: stopped within 10% under the limit, never past it
      const wrote = Number(/(\d+)\+\d+ records out/.exec(logs)?.[1]) * MiB;
      expect(wrote, logs).to.be.within(0.9 * LIMIT, LIMIT);
      const disk = capped.lastAttestation?.checks.find((c) => c.name === 'disk');
      expect(disk, JSON.stringify(capped.lastAttestation)).to.deep.include({
        ok: true,
        detail: `writable layer capped by the engine: storage options size=${LIMIT}`,
      });
      const c = await pe.docker.getContainer(capped.containerId as string).inspect();
      expect((c.HostConfig as { StorageOpt?: Record<string, string> }).StorageOpt).to.deep.equal({ size: String(LIMIT) });
      // the results folder, measured: stopped past the limit within about an interval
      expect([results.phase, results.reason], results.message).to.deep.equal(['Failed', 'DiskLimitExceeded']);
      expect(results.message).to.match(/^disk use \d+(\.\d)? MiB exceeds resources\.disk 64 MiB \(results \d+/);
      expect(results.disk?.enforcedBy).to.equal('engine');
      // the neighbour, under the same limit, is untouched
      expect([roomy.phase, roomy.reason], roomy.message).to.deep.equal(['Succeeded', 'Completed']);
    } finally {
      expect(await ctl.stop()).to.equal(0);
    }
    const d = await s.cli('describe', 'capped');
    expect(d.stdout).to.match(/Disk limit:\s+64 MiB \(from resources\.disk; enforced by the engine for the writable layer \(StorageOpt size\)/);
  });
});
