/**
 * Attestation: does an existing container hold what the spec asks, in everything that matters
 * for isolation and correctness? Pure functions over what the engine reported.
 * - attestListed: from the label-filtered list (no extra engine call): labels and spec hash,
 *   image, attached networks, mounts (results the only bind).
 * - attestInspected: from `inspect`: the above plus security settings and limits.
 */
import { DEFAULTS, LABELS } from '../constants';
import type { ContainerDetails, ContainerSummary } from '../engine/types';
import type { DesiredAttempt, DesiredSidecar } from '../desired/types';
import type { ContainerCreateSpec } from '../engine/types';
import type { AttestationCheck } from '../status/types';

function check(name: string, ok: boolean, detail: string): AttestationCheck {
  return { name, ok, detail };
}

function same(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && [...a].sort().every((x, i) => x === [...b].sort()[i]);
}

/** What one container must be: its create spec, its networks, and its one bind (main only). */
export interface ContainerWant {
  create: ContainerCreateSpec;
  expectedNetworks: string[];
  /** The results folder bound at /results, or null: no bind mount at all. */
  resultsDir: string | null;
  /**
   * The image id the container was made from, as its run's record says (an AttemptSet's child is
   * made from its set's pinned id, not its reference): a container whose image is that id holds
   * the image the spec names, whatever the reference names now.
   */
  imageId?: string;
}

export function mainWant(d: DesiredAttempt, imageId?: string): ContainerWant {
  return { create: d.container.create, expectedNetworks: d.expectedNetworks, resultsDir: d.resultsDir, ...(imageId ? { imageId } : {}) };
}

function imageCheck(c: ContainerSummary, d: ContainerWant): AttestationCheck {
  const want = d.create.image;
  if (c.image === want || c.imageId === want) return check('image', true, `image ${c.image}`);
  if (d.imageId !== undefined && c.imageId === d.imageId) return check('image', true, `image ${want} as ${d.imageId} (the id it was made from)`);
  return check('image', false, `image ${c.image} (spec asks ${want}${d.imageId ? ` as ${d.imageId}` : ''})`);
}

export function sidecarWant(s: DesiredSidecar): ContainerWant {
  return { create: s.create, expectedNetworks: s.expectedNetworks, resultsDir: null };
}

export function attestListed(c: ContainerSummary, d: ContainerWant): AttestationCheck[] {
  const want = d.create;
  const labelKeys = [LABELS.managed, LABELS.instance, LABELS.attempt, LABELS.specHash, LABELS.component];
  const wrongLabels = labelKeys.filter((k) => c.labels[k] !== want.labels[k]);
  const binds = c.mounts.filter((m) => m.type === 'bind');
  const resultsBind =
    d.resultsDir === null ? binds.length === 0 : binds.length === 1 && binds[0]?.destination === DEFAULTS.resultsMount && binds[0].source === d.resultsDir;
  const vols = c.mounts.filter((m) => m.type === 'volume').map((m) => `${m.name ?? m.source}:${m.destination}`);
  const wantVols = want.host.mounts.map((m) => `${m.source}:${m.target}`);
  const others = c.mounts.filter((m) => m.type !== 'bind' && m.type !== 'volume');
  return [
    check(
      'labels',
      wrongLabels.length === 0,
      wrongLabels.length
        ? `labels differ: ${wrongLabels.map((k) => `${k}=${c.labels[k] ?? '<none>'}`).join(', ')}`
        : 'owner, attempt and spec hash labels match',
    ),
    imageCheck(c, d),
    check(
      'networks',
      same(c.networks, d.expectedNetworks),
      same(c.networks, d.expectedNetworks)
        ? `attached to ${d.expectedNetworks.join(', ')} only`
        : `attached to network ${c.networks.filter((n) => !d.expectedNetworks.includes(n)).join(', ') || '<none>'}; spec allows ${d.expectedNetworks.join(', ')}`,
    ),
    check(
      'mounts',
      resultsBind && same(vols, wantVols) && others.length === 0,
      resultsBind && same(vols, wantVols) && others.length === 0
        ? `${d.resultsDir === null ? 'no bind mounts' : 'results folder is the only bind mount'}${wantVols.length ? `; volumes ${wantVols.join(', ')}` : ''}`
        : `mounts differ: binds ${binds.map((b) => `${b.source}:${b.destination}`).join(', ') || '<none>'}; volumes ${vols.join(', ') || '<none>'}${others.length ? `; other ${others.map((o) => `${o.type}:${o.destination}`).join(', ')}` : ''}`,
    ),
  ];
}

export function attestInspected(c: ContainerDetails, d: ContainerWant): AttestationCheck[] {
  const want = d.create.host;
  const h = c.host;
  const hostNs = (['pidMode', 'ipcMode', 'utsMode', 'usernsMode', 'cgroupnsMode'] as const).filter((k) => h[k] === 'host');
  if (h.networkMode === 'host') hostNs.push('networkMode' as never);
  const security =
    !h.privileged &&
    same(
      h.capDrop.map((x) => x.toUpperCase()),
      want.capDrop,
    ) &&
    same(h.capAdd, want.capAdd) &&
    want.securityOpt.every((o) => h.securityOpt.includes(o)) &&
    !h.securityOpt.some((o) => /^seccomp[=:]unconfined$/.test(o) || /^apparmor[=:]unconfined$/.test(o)) &&
    h.devices === 0 &&
    h.readonlyRootfs === want.readonlyRootfs;
  const limits =
    h.nanoCpus === (want.nanoCpus ?? 0) &&
    h.memory === (want.memory ?? 0) &&
    (want.memory === undefined || h.memorySwap === want.memorySwap) &&
    h.pidsLimit === want.pidsLimit;
  return [
    ...attestListed(c, d),
    check(
      'security',
      security,
      security
        ? 'not privileged; all capabilities dropped; no-new-privileges; default seccomp; no devices'
        : `privileged=${h.privileged} capDrop=[${h.capDrop.join(',')}] capAdd=[${h.capAdd.join(',')}] securityOpt=[${h.securityOpt.join(',')}] devices=${h.devices}`,
    ),
    check('namespaces', hostNs.length === 0, hostNs.length ? `shares host namespaces: ${hostNs.join(', ')}` : 'no host namespaces'),
    check(
      'ports',
      h.portBindings === 0 && !h.publishAllPorts,
      h.portBindings === 0 && !h.publishAllPorts ? 'no published ports' : `publishes ports (${h.portBindings} bindings, publishAll=${h.publishAllPorts})`,
    ),
    check(
      'limits',
      limits,
      `cpus=${h.nanoCpus / 1e9 || 'unlimited'} memory=${h.memory || 'unlimited'} swap=${h.memorySwap || 'default'} pids=${h.pidsLimit}` +
        (limits ? '' : ` (spec asks cpus=${(want.nanoCpus ?? 0) / 1e9 || 'unlimited'} memory=${want.memory ?? 'unlimited'} pids=${want.pidsLimit})`),
    ),
    check('init-restart', h.init === want.init && (h.restartPolicy === 'no' || h.restartPolicy === ''), `init=${h.init} restart=${h.restartPolicy || 'no'}`),
    userCheck(c.config.user, d.create.user),
    rootfsCheck(h.readonlyRootfs, h.tmpfs, want.readonlyRootfs, want.tmpfs ?? {}),
    dnsCheck(h.dns, want.dns),
    logCheck(h.logConfig, want.logConfig),
    ...(want.storageOpt || h.storageOpt ? [diskCheck(h.storageOpt ?? {}, want.storageOpt ?? {})] : []),
  ];
}

/** resources.disk where the engine enforces it: the container's StorageOpt is exactly what berth asked (its writable layer capped at the limit). */
function diskCheck(have: Record<string, string>, want: Record<string, string>): AttestationCheck {
  const show = (o: Record<string, string>) =>
    Object.keys(o).length
      ? Object.entries(o)
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([k, v]) => `${k}=${v}`)
          .join(', ')
      : 'none';
  const ok = show(have) === show(want);
  return check(
    'disk',
    ok,
    ok ? `writable layer capped by the engine: storage options ${show(have)}` : `storage options ${show(have)} (berth asks ${show(want)})`,
  );
}

/** The engine's own log files of the container are capped as berth asked (a run cannot fill the host's disk through them). */
function logCheck(have: ContainerDetails['host']['logConfig'], want: ContainerDetails['host']['logConfig'] | undefined): AttestationCheck {
  const show = (l: ContainerDetails['host']['logConfig']) =>
    `${l.type || "the engine's default driver"}${
      Object.keys(l.config).length
        ? ` (${Object.entries(l.config)
            .sort(([a], [b]) => a.localeCompare(b))
            .map(([k, v]) => `${k}=${v}`)
            .join(', ')})`
        : ', no size cap'
    }`;
  if (want === undefined) return check('engine logs', true, `${show(have)}: as the engine's defaults say`);
  const ok = have.type === want.type && Object.entries(want.config).every(([k, v]) => have.config[k] === v);
  return check('engine logs', ok, ok ? show(have) : `${show(have)} (berth asks ${show(want)})`);
}

/** spec.user: the container runs as the uid:gid asked; without one, as its image says. */
function userCheck(have: string, want: string | undefined): AttestationCheck {
  const shown = have || 'root (the image names no user)';
  if (want === undefined) return check('user', true, `runs as ${shown}: the image's user (spec.user not set)`);
  return check('user', have === want, have === want ? `runs as ${want} (spec.user)` : `runs as ${shown} (spec.user asks ${want})`);
}

/** spec.readOnlyRootFilesystem: / read-only with its tmpfs, or writable (the default). */
function rootfsCheck(readOnly: boolean, tmpfs: Record<string, string>, wantReadOnly: boolean, wantTmpfs: Record<string, string>): AttestationCheck {
  const paths = (t: Record<string, string>) => Object.keys(t).sort().join(', ');
  const ok =
    readOnly === wantReadOnly &&
    same(
      Object.entries(tmpfs).map(([k, v]) => `${k}=${v}`),
      Object.entries(wantTmpfs).map(([k, v]) => `${k}=${v}`),
    );
  const have = `${readOnly ? 'read-only' : 'writable'} root filesystem${Object.keys(tmpfs).length ? `, tmpfs ${paths(tmpfs)}` : ''}`;
  const wanted = `${wantReadOnly ? 'read-only' : 'writable'}${Object.keys(wantTmpfs).length ? `, tmpfs ${paths(wantTmpfs)}` : ''}`;
  return check('root filesystem', ok, ok ? have : `${have} (spec asks ${wanted})`);
}

/** Containers on an internal network must have the upstream that answers nothing (DEFAULTS.internalDns). */
function dnsCheck(have: readonly string[], want: readonly string[] | undefined): AttestationCheck {
  if (want === undefined) return check('dns', true, have.length ? `upstream DNS ${have.join(', ')}` : "the engine's default upstream DNS");
  const ok = same(have, want);
  return check(
    'dns',
    ok,
    ok
      ? `upstream DNS ${want.join(', ')} only: lookups of outside names cannot leave the internal network`
      : `upstream DNS ${have.join(', ') || "<the engine's default>"} (must be ${want.join(', ')}: otherwise the engine may forward lookups out of the internal network)`,
  );
}

/** The first failing check as a cause string, e.g. "attestation failed: attached to network bridge; ...". */
export function failedCause(checks: AttestationCheck[]): string | undefined {
  const bad = checks.filter((c) => !c.ok);
  return bad.length ? `attestation failed: ${bad.map((c) => c.detail).join('; ')}` : undefined;
}
