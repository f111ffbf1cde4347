/**
 * resources.disk on a private engine whose data root is an xfs file system the test makes on a
 * loop device (Debian's xfsprogs: scripts/fs-up.sh, `make fs`; test/support/loop-fs.ts). Where the data root is
 * mounted with project quotas, overlay2 enforces a writable layer's size (StorageOpt size) and
 * berth asks for it (unit-tested: test/unit/attest/disk.test.ts). This machine's kernel has no
 * XFS quota support (`mount -o pquota` fails: "quota support not available in this kernel"), so
 * what this test proves is the other side: on xfs without project quotas, the engine refuses a
 * size, berth sees so from the data root's mount and does not ask (every create would fail),
 * and measures instead. Everything is torn down after, also on failure: the engine by its pid,
 * the mount, the loop device, the files.
 */
import { expect } from 'chai';
import path from 'node:path';
import { createDockerEngine } from '../../src/engine/docker';
import { startController } from '../support/controller';
import { requireEngine } from '../support/engine';
import { engineOnLoopFs } from '../support/loop-fs';
import { waitFor } from '../support/wait';

const LIMIT = 64 * 1024 * 1024;

describe('resources.disk on an xfs data root (private engine on a loop device)', function () {
  this.timeout(180_000);
  before(requireEngine);

  // pquota is what the engine needs to enforce a size; this machine's kernel has no XFS quota
  // support (mount -o pquota fails), so the file system is mounted without
  const { engine: pe, sandbox } = engineOnLoopFs('xfs');

  it('on xfs without project quotas (this kernel has no XFS quota support) berth does not ask the engine for a size it would refuse: it measures', async function () {
    const s = sandbox();
    const info = await pe.docker.info();
    expect([info.Driver, (info.DriverStatus as [string, string][]).find(([k]) => k === 'Backing Filesystem')?.[1]]).to.deep.equal(['overlay2', 'xfs']);
    // the engine refuses a size on this data root: asking for one would fail every create
    const refused = await pe.docker.createContainer({ Image: 'berth/busybox:local', Cmd: ['true'], HostConfig: { StorageOpt: { size: '64M' } } } as never).then(
      () => undefined,
      (err: { statusCode?: number }) => err,
    );
    expect(refused?.statusCode, 'the engine accepted a size on xfs without pquota').to.be.oneOf([400, 500]);
    await s.write(
      'x.yaml',
      s.attempt(
        'capped',
        'dd if=/dev/zero of=/fill bs=1M count=1 2>/dev/null; i=0; while :; do dd if=/dev/zero of=/f$i bs=1M count=1 2>/dev/null; i=$((i+1)); sleep 0.05; done',
        '  resources: {disk: 64Mi}\n',
      ),
    );
    const engine = createDockerEngine(pe.docker);
    const ctl = startController(s, { resync: 600, diskInterval: 1000 }, engine);
    const attempts = path.join(s.stateDir, s.instance, 'attempts');
    try {
      const rec = await waitFor(
        'capped finished',
        async () => {
          const r = await s.status('capped');
          return r && ['Succeeded', 'Failed'].includes(r.phase) ? r : undefined;
        },
        { dirs: [attempts], timeoutMs: 90_000 },
      );
      expect([rec.phase, rec.reason], rec.message).to.deep.equal(['Failed', 'DiskLimitExceeded']);
      expect(rec.disk).to.deep.equal({ bytes: LIMIT, source: 'spec', enforcedBy: 'measured' });
      expect(rec.message).to.match(/writable layer \d+(\.\d)? MiB/);
      const c = await pe.docker.getContainer(rec.containerId as string).inspect();
      expect((c.HostConfig as { StorageOpt?: Record<string, string> | null }).StorageOpt ?? undefined).to.equal(undefined);
      expect(c.GraphDriver.Name).to.equal('overlay2');
    } finally {
      expect(await ctl.stop()).to.equal(0);
    }
    const d = await s.cli('describe', 'capped');
    expect(d.stdout).to.match(/Disk limit:\s+64 MiB \(from resources\.disk; measured by berth at an interval/);
  });
});
