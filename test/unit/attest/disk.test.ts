/** resources.disk where the engine enforces it: asked as StorageOpt size, attested; and how berth knows the engine can (observe/storage.ts). */
import { expect } from 'chai';
import { attestInspected, failedCause, mainWant } from '../../../src/attest/checks';
import { desiredAttempt } from '../../../src/desired/attempt';
import type { Engine } from '../../../src/engine/types';
import { engineCaps, mountOf, quotaMount } from '../../../src/observe/storage';
import { FakeEngine } from '../../support/fake-engine';
import { spec } from '../../support/builders';

describe('attestation: the disk limit the engine enforces', function () {
  const limited = spec('disk', { resources: { cpus: null, memoryBytes: null, pids: 512, diskBytes: 64 * 1024 * 1024 } });
  const disk = (checks: ReturnType<typeof attestInspected>) => checks.find((c) => c.name === 'disk');
  const made = async (create: ReturnType<typeof desiredAttempt>['container']['create']) => {
    const e = new FakeEngine();
    e.addImage({ ref: create.image });
    return e.containers.inspect(await e.containers.create(create));
  };

  it('asks the engine for the size only where it can enforce it; the check passes for a container made so', async function () {
    const measured = desiredAttempt({ instance: 'i', policy: {} }, limited, 1, '/r/disk/run-1/results');
    expect(measured.container.create.host.storageOpt).to.equal(undefined);
    expect(disk(attestInspected(await made(measured.container.create), mainWant(measured)))).to.equal(undefined);
    const d = desiredAttempt({ instance: 'i', policy: {}, diskQuota: true }, limited, 1, '/r/disk/run-1/results');
    expect(d.container.create.host.storageOpt).to.deep.equal({ size: String(64 * 1024 * 1024) });
    expect(disk(attestInspected(await made(d.container.create), mainWant(d)))).to.deep.equal({
      name: 'disk',
      ok: true,
      detail: 'writable layer capped by the engine: storage options size=67108864',
    });
    // no limit, no size asked, whatever the engine can do
    expect(desiredAttempt({ instance: 'i', policy: {}, diskQuota: true }, spec('free'), 1, '/r/f/run-1/results').container.create.host.storageOpt).to.equal(
      undefined,
    );
  });

  it('fails a container whose size is not the one asked, or that has none', async function () {
    const d = desiredAttempt({ instance: 'i', policy: {}, diskQuota: true }, limited, 1, '/r/disk/run-1/results');
    const { storageOpt: _drop, ...host } = d.container.create.host;
    const none = attestInspected(await made({ ...d.container.create, host }), mainWant(d));
    expect(disk(none)?.ok).to.equal(false);
    expect(failedCause(none)).to.include('storage options none (berth asks size=67108864)');
    const other = attestInspected(await made({ ...d.container.create, host: { ...host, storageOpt: { size: '1073741824' } } }), mainWant(d));
    expect(failedCause(other)).to.include('storage options size=1073741824 (berth asks size=67108864)');
  });

  it('knows an xfs data root with project quotas from its mount, and nothing else', function () {
    const mounts = [
      '/dev/vda / ext4 rw,relatime 0 0',
      '/dev/loop0 /var/lib/dock\\040er xfs rw,relatime,attr2,inode64,logbufs=8,logbsize=32k,prjquota 0 0',
      '/dev/loop1 /srv/plain xfs rw,relatime,attr2,inode64,noquota 0 0',
    ].join('\n');
    expect(quotaMount(mountOf(mounts, '/var/lib/dock er'))).to.equal(true);
    expect(quotaMount(mountOf(mounts, '/var/lib/dock er/overlay2'))).to.equal(true);
    expect(quotaMount(mountOf(mounts, '/srv/plain/docker'))).to.equal(false);
    expect(quotaMount(mountOf(mounts, '/var/lib/docker'))).to.equal(false); // on / (ext4): not under the quota mount
    expect(quotaMount(mountOf('', '/x'))).to.equal(false);
  });

  it('asks btrfs and zfs engines whatever their mount, overlay2 only on xfs with project quotas, and never an engine that does not say', async function () {
    const asking = (driver: string, backingFs: string, dataRoot = '/srv/none/docker') =>
      ({ local: { storage: async () => ({ driver, backingFs, dataRoot }) } }) as unknown as Engine;
    expect((await engineCaps(asking('btrfs', ''))).layer).to.equal(true);
    expect((await engineCaps(asking('zfs', ''))).layer).to.equal(true);
    // this host's mounts: no xfs with project quotas under /srv/none (nor anywhere here)
    expect((await engineCaps(asking('overlay2', 'xfs'))).layer).to.equal(false);
    expect((await engineCaps(asking('overlay2', 'extfs'))).layer).to.equal(false);
    expect((await engineCaps(asking('vfs', ''))).layer).to.equal(false);
    expect((await engineCaps({ local: null } as Engine)).layer).to.equal(false);
  });

  it("asks the engine for a volume's size (its local driver's size option) only where it can enforce it; the options are what the attestation expects", function () {
    const sized = spec('vol', { volumes: [{ name: 'data', mountPath: '/data', readOnly: false, sizeBytes: 64 * 1024 * 1024 }] });
    expect(desiredAttempt({ instance: 'i', policy: {} }, sized, 1, '/r/vol/run-1/results').volumes.map((v) => [v.driver, v.options])).to.deep.equal([
      ['local', {}],
    ]);
    expect(
      desiredAttempt({ instance: 'i', policy: {}, volumeQuota: true }, sized, 1, '/r/vol/run-1/results').volumes.map((v) => [v.driver, v.options]),
    ).to.deep.equal([['local', { size: String(64 * 1024 * 1024) }]]);
    // a volume with no size of its own is made as before, whatever the engine can do
    const plain = spec('vol', { volumes: [{ name: 'data', mountPath: '/data', readOnly: false, sizeBytes: null }] });
    expect(desiredAttempt({ instance: 'i', policy: {}, volumeQuota: true }, plain, 1, '/r/vol/run-1/results').volumes.map((v) => v.options)).to.deep.equal([
      {},
    ]);
  });
});
