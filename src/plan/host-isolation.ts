/**
 * Whether an engine isolates an untrusted attempt at all (pure, from engine/isolation.ts's facts):
 * berth hardens every container it makes (all capabilities dropped, no-new-privileges, the
 * engine's default seccomp, limits), but what the engine does not have it cannot ask for. An
 * engine without seccomp, with an unconfined default profile, or whose default runtime is not one
 * known to isolate (a runtime that runs containers as the host, say) is weak: `reconcile` refuses
 * to run attempts there unless `--allow-weak-isolation`. What only weakens isolation (cgroup v1,
 * no user namespaces, a storage driver without copy-on-write) is said, not refused.
 */
import type { HostIsolation } from '../engine/isolation';

/** Runtimes that isolate containers as runc does, or better (gVisor, Kata, sysbox). */
export const ISOLATING_RUNTIMES: ReadonlySet<string> = new Set([
  'runc',
  'crun',
  'youki',
  'io.containerd.runc.v2',
  'io.containerd.runc.v1',
  'runsc',
  'io.containerd.runsc.v1',
  'kata',
  'kata-runtime',
  'kata-runc',
  'io.containerd.kata.v2',
  'sysbox-runc',
]);

export interface IsolationVerdict {
  /** Why attempts may not run there (empty: they may). */
  weak: string[];
  /** What weakens isolation without refusing it. */
  notes: string[];
}

export function judgeIsolation(h: HostIsolation): IsolationVerdict {
  const weak: string[] = [];
  const notes: string[] = [];
  if (h.seccomp === 'absent') weak.push('the engine has no seccomp (none in its security options): an attempt could make any system call');
  else if (h.seccomp === 'unconfined')
    weak.push("the engine's default seccomp profile is unconfined (dockerd --seccomp-profile unconfined): an attempt could make any system call");
  if (h.defaultRuntime && !ISOLATING_RUNTIMES.has(h.defaultRuntime))
    weak.push(
      `its default runtime ${h.defaultRuntime} is not one berth knows to isolate (${[...ISOLATING_RUNTIMES].filter((r) => !r.includes('.')).join(', ')})`,
    );
  if (h.cgroupVersion === '1') notes.push('cgroup v1 (limits hold; cgroup v2 accounts memory and pids more tightly)');
  if (!h.userns && !h.rootless) notes.push("no user namespaces (a container's root is the host's root, held by its dropped capabilities and seccomp)");
  if (h.storageDriver === 'vfs') notes.push('the vfs storage driver (no copy-on-write: every container copies its image)');
  return { weak, notes };
}

/** One line of facts, as `berth version` prints them: `seccomp default, apparmor, cgroup v2, user namespaces, storage overlay2, runtime runc`. */
export function isolationFacts(h: HostIsolation): string {
  return [
    `seccomp ${h.seccomp}`,
    ...(h.apparmor ? ['apparmor'] : []),
    ...(h.selinux ? ['selinux'] : []),
    `cgroup v${h.cgroupVersion ?? '?'}`,
    h.userns ? 'user namespaces' : h.rootless ? 'rootless' : 'no user namespaces',
    `storage ${h.storageDriver || '?'}`,
    `runtime ${h.defaultRuntime || '?'}`,
  ].join(', ');
}
