/** The containerd image store's writable layer, found from the container's root mount (src/observe/overlay-upper.ts). */
import { expect } from 'chai';
import { rootUpperDir, upperDirOfPid } from '../../../src/observe/overlay-upper';

const SNAP = '/var/lib/docker/containerd/daemon/io.containerd.snapshotter.v1.overlayfs/snapshots';
const line = (id: number, at: string, fs: string, opts: string) => `${id} 1 0:48 / ${at} rw,relatime - ${fs} ${fs} ${opts}`;

describe('the writable layer of a container on the containerd image store', function () {
  it('is the upperdir of the overlay mounted at its root, as its mount table says', function () {
    const text = [
      line(192, '/', 'overlay', `rw,lowerdir=${SNAP}/261/fs:${SNAP}/1/fs,upperdir=${SNAP}/262/fs,workdir=${SNAP}/262/work`),
      line(193, '/proc', 'proc', 'rw'),
      line(194, '/results', 'ext4', 'rw,upperdir=/not/this'),
      '',
    ].join('\n');
    expect(rootUpperDir(text)).to.equal(`${SNAP}/262/fs`);
    // a space in the path (mountinfo's octal escape)
    expect(rootUpperDir(line(1, '/', 'overlay', 'rw,upperdir=/data\\040root/9/fs,workdir=/w'))).to.equal('/data root/9/fs');
  });

  it('is none where the root is no overlay, or its upperdir is relative', function () {
    expect(rootUpperDir(line(1, '/', 'ext4', 'rw'))).to.equal(undefined);
    expect(rootUpperDir(line(1, '/', 'overlay', 'rw,upperdir=9/fs,workdir=9/work'))).to.equal(undefined);
    expect(rootUpperDir('')).to.equal(undefined);
  });

  it("is none for a process that is no container's (no overlay at its root) or no process", async function () {
    expect(await upperDirOfPid(process.pid)).to.equal(undefined);
    expect(await upperDirOfPid(0)).to.equal(undefined);
  });
});
