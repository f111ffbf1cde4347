/**
 * What an engine says of the isolation it gives every container (its GET /info), as facts:
 * seccomp and its default profile, AppArmor, SELinux, user namespaces (userns-remap), rootless,
 * the cgroup version, the storage driver and the default runtime. Read here (pure); judged in
 * plan/host-isolation.ts, which says whether berth may run an untrusted attempt there.
 */

export interface HostIsolation {
  /** The engine's seccomp: its default profile (`default`, `builtin`, a custom one's path: `custom`), `unconfined`, or `absent` (built without it). */
  seccomp: 'default' | 'custom' | 'unconfined' | 'absent';
  apparmor: boolean;
  selinux: boolean;
  /** Containers' root is remapped to an unprivileged user (dockerd --userns-remap). */
  userns: boolean;
  /** The engine itself runs without root. */
  rootless: boolean;
  /** '1' or '2'; null when the engine does not say. */
  cgroupVersion: string | null;
  storageDriver: string;
  defaultRuntime: string;
}

/** The facts in `docker info`'s JSON (SecurityOptions as `name=seccomp,profile=default`). */
export function isolationOf(info: { SecurityOptions?: string[] | null; CgroupVersion?: string; Driver?: string; DefaultRuntime?: string }): HostIsolation {
  const opts = (info.SecurityOptions ?? []).map((o) => new Map(o.split(',').map((kv) => kv.split('=', 2) as [string, string])));
  const named = (n: string) => opts.find((m) => m.get('name') === n);
  const sc = named('seccomp');
  const profile = sc?.get('profile') ?? 'default';
  return {
    seccomp: !sc ? 'absent' : profile === 'unconfined' ? 'unconfined' : profile === 'default' || profile === 'builtin' ? 'default' : 'custom',
    apparmor: !!named('apparmor'),
    selinux: !!named('selinux'),
    userns: !!named('userns'),
    rootless: !!named('rootless'),
    cgroupVersion: info.CgroupVersion ?? null,
    storageDriver: info.Driver ?? '',
    defaultRuntime: info.DefaultRuntime ?? '',
  };
}
