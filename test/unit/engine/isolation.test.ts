/** The host check's facts (engine/isolation.ts) and verdict (plan/host-isolation.ts). */
import { expect } from 'chai';
import { isolationOf } from '../../../src/engine/isolation';
import { judgeIsolation } from '../../../src/plan/host-isolation';

describe('host isolation: what the engine says, and whether berth runs attempts there', () => {
  const info = (over: Record<string, unknown> = {}) => ({
    SecurityOptions: ['name=apparmor', 'name=seccomp,profile=builtin', 'name=cgroupns'],
    CgroupVersion: '2',
    Driver: 'overlay2',
    DefaultRuntime: 'runc',
    ...over,
  });

  it('reads docker info: seccomp and its profile, apparmor, user namespaces, rootless, cgroup, driver, runtime', () => {
    expect(isolationOf(info())).to.deep.equal({
      seccomp: 'default',
      apparmor: true,
      selinux: false,
      userns: false,
      rootless: false,
      cgroupVersion: '2',
      storageDriver: 'overlay2',
      defaultRuntime: 'runc',
    });
    expect(isolationOf(info({ SecurityOptions: ['name=seccomp,profile=/etc/docker/seccomp.json', 'name=userns', 'name=rootless'] }))).to.include({
      seccomp: 'custom',
      userns: true,
      rootless: true,
      apparmor: false,
    });
    expect(isolationOf(info({ SecurityOptions: ['name=seccomp,profile=unconfined'] })).seccomp).to.equal('unconfined');
    expect(isolationOf(info({ SecurityOptions: null })).seccomp).to.equal('absent');
    expect(isolationOf({}).cgroupVersion).to.equal(null);
  });

  it('refuses no seccomp, an unconfined profile, a runtime it does not know; cgroup v1, no user namespaces and vfs are notes only', () => {
    expect(judgeIsolation(isolationOf(info()))).to.deep.equal({
      weak: [],
      notes: ["no user namespaces (a container's root is the host's root, held by its dropped capabilities and seccomp)"],
    });
    const weak = judgeIsolation(isolationOf(info({ SecurityOptions: ['name=seccomp,profile=unconfined'], DefaultRuntime: 'hostish' })));
    expect(weak.weak).to.have.length(2);
    expect(weak.weak[0]).to.match(/unconfined/);
    expect(weak.weak[1]).to.match(/default runtime hostish is not one berth knows to isolate/);
    expect(judgeIsolation(isolationOf(info({ SecurityOptions: [] }))).weak[0]).to.match(/no seccomp/);
    for (const r of ['crun', 'runsc', 'io.containerd.runc.v2', 'kata', 'sysbox-runc'])
      expect(judgeIsolation(isolationOf(info({ DefaultRuntime: r }))).weak, r).to.deep.equal([]);
    const notes = judgeIsolation(
      isolationOf(info({ CgroupVersion: '1', Driver: 'vfs', SecurityOptions: ['name=seccomp,profile=default', 'name=userns'] })),
    ).notes;
    expect(notes.map((n) => n.split(' ')[0])).to.deep.equal(['cgroup', 'the']);
  });
});
