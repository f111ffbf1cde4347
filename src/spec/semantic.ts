/**
 * Checks on a schema-valid document that JSON Schema cannot say: egress only with
 * network.mode isolated, secret references and unique secret names, unique volume names and
 * mount paths, reserved container paths (/results, /run/secrets, the working dir), and the memory
 * quantity's range. Pure: no filesystem (see path-checks.ts for that).
 */
import * as posix from 'node:path/posix';
import { DEFAULTS } from '../constants';
import { formatPath } from './field-path';
import { parseDisk, parseMemory, parseSize } from './quantity';
import type { RawAttempt, RawCredential } from './raw-types';
import type { FieldIssue } from './schema-errors';

const RESERVED = [DEFAULTS.resultsMount, DEFAULTS.secretsDir];
/** The egress proxy's name on an attempt's network: no sidecar may take it. */
export const EGRESS_PROXY_NAME = 'egress-proxy';

export function semanticIssues(doc: RawAttempt): FieldIssue[] {
  const out: FieldIssue[] = [];
  const spec = doc.spec;
  const add = (segs: FieldIssue['segs'], code: FieldIssue['code'], message: string, anchor: FieldIssue['anchor'] = 'value'): void => {
    out.push({ segs, anchor, code, message });
  };

  // docs/CONTRACT.md "Images built from a Dockerfile": build and image are exclusive
  // (the schema asks for image when there is no build)
  if (spec.image !== undefined && spec.build !== undefined)
    add(['spec', 'build'], 'schema', 'image and build are exclusive: the image is either named or built', 'key');
  if (spec.grade?.image !== undefined && spec.grade.build !== undefined)
    add(['spec', 'grade', 'build'], 'schema', 'grade.image and grade.build are exclusive: the grader’s image is either named or built', 'key');

  const mode = spec.network?.mode ?? DEFAULTS.networkMode;
  if ((spec.network?.egress?.length ?? 0) > 0 && mode !== 'isolated') {
    add(['spec', 'network', 'egress'], 'egress-mode', `egress needs network.mode: isolated (mode is ${mode})`);
  }

  const secretAt = new Map<string, number>();
  (spec.secrets ?? []).forEach((s, i) => {
    const first = secretAt.get(s.name);
    if (first !== undefined) {
      add(['spec', 'secrets', i, 'name'], 'secret-ref', `duplicate secret name "${s.name}" (also ${formatPath(['spec', 'secrets', first])})`);
    } else {
      secretAt.set(s.name, i);
    }
  });
  if ((spec.network?.credentials?.length ?? 0) > 0 && mode !== 'isolated') {
    add(['spec', 'network', 'credentials'], 'credential', `credentials need network.mode: isolated (mode is ${mode})`);
  }
  credentialIssues(spec.network?.credentials ?? [], spec.network?.egress ?? [], ['spec', 'network'], secretAt, add);
  (spec.sidecars ?? []).forEach((c, i) => credentialIssues(c.credentials ?? [], c.egress ?? [], ['spec', 'sidecars', i], secretAt, add));
  for (const [k, v] of Object.entries(spec.env ?? {})) {
    if (typeof v === 'object' && !secretAt.has(v.secretRef)) {
      const declared = [...secretAt.keys()];
      const known = declared.length ? `; declared: ${declared.join(', ')}` : '; spec.secrets declares none';
      add(['spec', 'env', k, 'secretRef'], 'secret-ref', `secret "${v.secretRef}" is not declared in spec.secrets${known}`);
    }
  }

  const sidecarAt = new Map<string, number>();
  (spec.sidecars ?? []).forEach((c, i) => {
    if (mode === 'bridge') add(['spec', 'sidecars', i], 'sidecar', `sidecars need network.mode isolated or none (mode is ${mode})`);
    const first = sidecarAt.get(c.name);
    if (first !== undefined)
      add(['spec', 'sidecars', i, 'name'], 'sidecar', `duplicate sidecar name "${c.name}" (also ${formatPath(['spec', 'sidecars', first])})`);
    else if (c.name === EGRESS_PROXY_NAME)
      add(['spec', 'sidecars', i, 'name'], 'sidecar', `"${EGRESS_PROXY_NAME}" is berth's own egress proxy; choose another name`);
    else sidecarAt.set(c.name, i);
    if (c.ready) {
      const probes = (['tcp', 'log', 'command'] as const).filter((k) => c.ready?.[k] !== undefined);
      if (probes.length !== 1) {
        add(
          ['spec', 'sidecars', i, 'ready'],
          'sidecar',
          `ready needs exactly one of tcp, log and command (${probes.length ? `has ${probes.join(', ')}` : 'has none'})`,
        );
      }
    }
    (c.secrets ?? []).forEach((name, j) => {
      if (!secretAt.has(name)) add(['spec', 'sidecars', i, 'secrets', j], 'secret-ref', `secret "${name}" is not declared in spec.secrets`);
    });
    for (const [k, v] of Object.entries(c.env ?? {})) {
      if (typeof v === 'object' && !(c.secrets ?? []).includes(v.secretRef)) {
        add(['spec', 'sidecars', i, 'env', k, 'secretRef'], 'secret-ref', `secret "${v.secretRef}" is not among this sidecar's secrets`);
      }
    }
  });
  for (const [k, v] of Object.entries(spec.env ?? {})) {
    if (typeof v === 'object' && (spec.sidecars ?? []).some((c) => (c.secrets ?? []).includes(v.secretRef))) {
      add(['spec', 'env', k, 'secretRef'], 'secret-ref', `secret "${v.secretRef}" goes to a sidecar, so not to the main container`);
    }
  }

  const workingDir = spec.workingDir === undefined ? DEFAULTS.workingDir : cleanPath(spec.workingDir);
  if (spec.workingDir !== undefined) {
    const why = pathProblem(spec.workingDir) ?? (isReserved(workingDir) ? `must not be ${reservedWhich(workingDir)} or below it` : undefined);
    if (why) add(['spec', 'workingDir'], 'schema', why);
  }

  const volumeAt = new Map<string, number>();
  const mountAt = new Map<string, number>();
  (spec.volumes ?? []).forEach((v, i) => {
    const first = volumeAt.get(v.name);
    if (first !== undefined)
      add(['spec', 'volumes', i, 'name'], 'schema', `duplicate volume name "${v.name}" (also ${formatPath(['spec', 'volumes', first])})`);
    else volumeAt.set(v.name, i);

    const mount = cleanPath(v.mountPath);
    const at: FieldIssue['segs'] = ['spec', 'volumes', i, 'mountPath'];
    const why = pathProblem(v.mountPath);
    if (why) add(at, 'schema', why);
    else if (mount === '/') add(at, 'schema', 'must not be /');
    else if (isReserved(mount)) add(at, 'schema', `must not be ${reservedWhich(mount)} or below it (berth mounts it)`);
    else if (mount === workingDir) add(at, 'schema', `must not be the workingDir ${workingDir} (the fixture is copied there)`);
    else if (mountAt.has(mount)) add(at, 'schema', `mount path ${mount} is also used by ${formatPath(['spec', 'volumes', mountAt.get(mount) ?? 0])}`);
    else mountAt.set(mount, i);
  });

  if (spec.sandbox) {
    // berth's own process is the main one: copied in before the start, which a read-only root takes nothing of
    if (spec.command !== undefined)
      add(['spec', 'sandbox'], 'schema', 'cannot be combined with command: a sandbox runs no command of its own (exec runs them)');
    if (spec.readOnlyRootFilesystem)
      add(['spec', 'sandbox'], 'schema', "cannot be combined with readOnlyRootFilesystem: berth's process is copied into the root filesystem before the start");
  }

  if (spec.readOnlyRootFilesystem) {
    // The engine refuses to copy into a read-only root filesystem, and berth never mounts them.
    const why = 'a read-only root filesystem cannot receive them: the engine copies nothing into one, and berth never mounts them';
    if (spec.fixture !== undefined) add(['spec', 'readOnlyRootFilesystem'], 'schema', `cannot be combined with fixture: ${why}`);
    if ((spec.secrets?.length ?? 0) > 0) add(['spec', 'readOnlyRootFilesystem'], 'schema', `cannot be combined with secrets: ${why}`);
  }

  const memory = spec.resources?.memory;
  if (memory !== undefined) {
    const parsed = parseMemory(memory);
    if (!parsed.ok) add(['spec', 'resources', 'memory'], 'quantity', parsed.message);
  }
  const disk = spec.resources?.disk;
  if (disk !== undefined) {
    const parsed = parseDisk(disk);
    if (!parsed.ok) add(['spec', 'resources', 'disk'], 'quantity', parsed.message);
  }
  for (const [i, v] of (spec.volumes ?? []).entries()) {
    if (v.size === undefined) continue;
    const parsed = parseDisk(v.size);
    if (!parsed.ok) add(['spec', 'volumes', i, 'size'], 'quantity', parsed.message);
  }
  const exportBytes = spec.workspace?.maxBytes;
  if (exportBytes !== undefined) {
    const parsed = parseSize(exportBytes);
    if (!parsed.ok) add(['spec', 'workspace', 'maxBytes'], 'quantity', parsed.message);
  }
  const keptBytes = spec.harvest?.maxBytes;
  if (keptBytes !== undefined) {
    const parsed = parseSize(keptBytes);
    if (!parsed.ok) add(['spec', 'harvest', 'maxBytes'], 'quantity', parsed.message);
  }
  return out;
}

/** Headers the proxy owns (framing, routing, hop-by-hop): a credential may not set them. */
const RESERVED_HEADERS = new Set([
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'te',
  'trailer',
  'upgrade',
  'proxy-authorization',
  'proxy-authenticate',
  'proxy-connection',
]);

/**
 * The credentials of the attempt (network.credentials) or of a sidecar: each naming declared
 * secrets, one per host, a header the proxy may set, and no host:port that the same egress list
 * names too (that would be a CONNECT, which the proxy refuses for a credentialed host).
 */
function credentialIssues(
  creds: readonly RawCredential[],
  egressList: readonly string[],
  under: FieldIssue['segs'],
  secretAt: ReadonlyMap<string, number>,
  add: (segs: FieldIssue['segs'], code: FieldIssue['code'], message: string) => void,
): void {
  const egress = new Set(egressList.map((e) => e.toLowerCase()));
  const hostAt = new Map<string, number>();
  creds.forEach((c, i) => {
    const at = (...rest: (string | number)[]): FieldIssue['segs'] => [...under, 'credentials', i, ...rest];
    for (const field of ['secret', 'caSecret'] as const) {
      const name = c[field];
      if (name !== undefined && !secretAt.has(name)) add(at(field), 'credential', `secret "${name}" is not declared in spec.secrets`);
    }
    if (c.header !== undefined && RESERVED_HEADERS.has(c.header.toLowerCase())) {
      add(at('header'), 'credential', `${c.header} is set by the proxy itself; choose another header`);
    }
    const target = c.host.toLowerCase();
    const host = target.slice(0, target.lastIndexOf(':'));
    const first = hostAt.get(host);
    if (first !== undefined) add(at('host'), 'credential', `${host} already has a credential (${formatPath([...under, 'credentials', first])}); one per host`);
    else hostAt.set(host, i);
    if (egress.has(target)) {
      add(
        at('host'),
        'credential',
        `${target} is also in ${under.length > 2 ? "the sidecar's egress" : 'network.egress'}: a credentialed host is reached with plain http:// through the proxy, not tunnelled; remove it from egress`,
      );
    }
  });
}

/** `/a//b/` → `/a/b`. */
export function cleanPath(p: string): string {
  const n = posix.normalize(p);
  return n.length > 1 && n.endsWith('/') ? n.slice(0, -1) : n;
}

function pathProblem(p: string): string | undefined {
  if (p.split('/').includes('..')) return 'must not contain ".." segments';
  return undefined;
}

function isReserved(p: string): boolean {
  return RESERVED.some((r) => p === r || p.startsWith(`${r}/`));
}

function reservedWhich(p: string): string {
  return RESERVED.find((r) => p === r || p.startsWith(`${r}/`)) ?? '';
}
