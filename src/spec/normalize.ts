/**
 * A schema-valid, checked document + its resolved host paths → NormalizedAttempt: every default
 * filled in (from DEFAULTS), memory in bytes, env split into plain values and secret references,
 * container paths cleaned, and lists whose order carries no meaning (secrets, volumes, egress)
 * sorted, so two ways of writing the same attempt normalize (and hash) the same.
 */
import { API_VERSION, buildTag, DEFAULTS, KIND_ATTEMPT } from '../constants';
import { parseDisk, parseMemory, parseSize } from './quantity';
import type { RawAttempt, RawCredential, RawGrade, RawSidecar } from './raw-types';
import { cleanPath } from './semantic';
import { layersDigest } from './fixture-digest';
import type {
  CredentialSpec,
  FixtureLayer,
  SidecarReady,
  NetworkMode,
  NormalizedAttempt,
  NormalizedBuild,
  NormalizedGrade,
  SecretRef,
  SidecarSpec,
} from './types';

/** Host-side facts the loader established for a document. */
export interface ResolvedPaths {
  /** The fixture's layers (real path and digest each), in order; empty without a fixture. */
  fixtureLayers: readonly FixtureLayer[];
  /** Secret name → real path of its `fromFile`. */
  secretFiles: ReadonlyMap<string, string>;
  /** `results` (or the default, the name), normalized, relative to the results root. */
  results: string;
  /** spec.grade.fixture: its real path and digest, or null. */
  gradeFixture?: { path: string; digest: string } | null;
  /** spec.build and grade.build, as loaded (build-context.ts). */
  build?: NormalizedBuild;
  gradeBuild?: NormalizedBuild;
}

/** `"1000:1000"` (schema-checked) → its numbers. */
function parseUser(u: string): { uid: number; gid: number } {
  const [uid, gid] = u.split(':').map(Number);
  return { uid: uid ?? 0, gid: gid ?? 0 };
}

const byName = <T extends { name: string }>(a: T, b: T): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/** spec.grade with its defaults: the attempt's image (null), no fixture, nothing protected (sorted), no deadline, no network, always. */
function normalizeGrade(g: RawGrade, fixture: { path: string; digest: string } | null, build: NormalizedBuild | undefined): NormalizedGrade {
  const memory = g.resources?.memory;
  const parsed = memory === undefined ? undefined : parseMemory(memory);
  return {
    image: build ? buildTag(build.hash) : (g.image ?? null),
    // written only when given: a grade from before builds hashes as it did
    ...(build ? { build } : {}),
    command: [...g.command],
    env: { ...(g.env ?? {}) },
    fixture: fixture?.path ?? null,
    fixtureDigest: fixture?.digest ?? null,
    protect: [...new Set(g.protect ?? [])].sort(),
    deadlineSeconds: g.deadlineSeconds ?? null,
    resources: { cpus: g.resources?.cpus ?? null, memoryBytes: parsed?.ok ? parsed.bytes : null, pids: g.resources?.pids ?? DEFAULTS.pids },
    network: { mode: 'none' },
    when: g.when ?? 'always',
  };
}

export function normalize(doc: RawAttempt, resolved: ResolvedPaths): NormalizedAttempt {
  const s = doc.spec;
  const env: Record<string, string> = {};
  const secretEnv: Record<string, string> = {};
  for (const [k, v] of Object.entries(s.env ?? {})) {
    if (typeof v === 'string') env[k] = v;
    else secretEnv[k] = v.secretRef;
  }
  const secrets: SecretRef[] = (s.secrets ?? [])
    .map((x): SecretRef => {
      if (x.fromEnv !== undefined) return { name: x.name, fromEnv: x.fromEnv };
      return { name: x.name, fromFile: resolved.secretFiles.get(x.name) ?? x.fromFile };
    })
    .sort(byName);
  const sidecars: SidecarSpec[] = (s.sidecars ?? [])
    .map((c): SidecarSpec => {
      const cEnv: Record<string, string> = {};
      const cSecretEnv: Record<string, string> = {};
      for (const [k, v] of Object.entries(c.env ?? {})) {
        if (typeof v === 'string') cEnv[k] = v;
        else cSecretEnv[k] = v.secretRef;
      }
      return {
        name: c.name,
        image: c.image,
        command: c.command ? [...c.command] : null,
        env: cEnv,
        secretEnv: cSecretEnv,
        secrets: [...new Set(c.secrets ?? [])].sort(),
        // written only when given: a sidecar from before these fields hashes as it did
        ...(c.egress?.length ? { egress: [...new Set(c.egress.map((e) => e.toLowerCase()))].sort() } : {}),
        ...(c.credentials?.length ? { credentials: normalizeCredentials(c.credentials) } : {}),
        ...(c.ready ? { ready: normalizeReady(c.ready) } : {}),
      };
    })
    .sort(byName);
  const memory = s.resources?.memory;
  const parsedMemory = memory === undefined ? undefined : parseMemory(memory);

  return {
    apiVersion: API_VERSION,
    kind: KIND_ATTEMPT,
    name: doc.metadata.name,
    labels: { ...(doc.metadata.labels ?? {}) },
    // a build's image is the tag its build hash names (semantic.ts: exactly one of image and build)
    image: resolved.build ? buildTag(resolved.build.hash) : (s.image ?? ''),
    ...(resolved.build ? { build: resolved.build } : {}),
    pullPolicies: {
      main: s.imagePullPolicy ?? DEFAULTS.imagePullPolicy,
      grade: s.grade?.imagePullPolicy ?? s.imagePullPolicy ?? DEFAULTS.imagePullPolicy,
      sidecars: Object.fromEntries((s.sidecars ?? []).map((c) => [c.name, c.imagePullPolicy ?? DEFAULTS.imagePullPolicy])),
    },
    command: s.command ? [...s.command] : null,
    workingDir: s.workingDir === undefined ? DEFAULTS.workingDir : cleanPath(s.workingDir),
    env,
    secretEnv,
    secrets,
    fixture: resolved.fixtureLayers[0]?.path ?? null,
    fixtureDigest: layersDigest(resolved.fixtureLayers.map((l) => l.digest)),
    fixtureLayers: resolved.fixtureLayers.map((l) => ({ path: l.path, digest: l.digest })),
    results: resolved.results,
    network: {
      mode: (s.network?.mode ?? DEFAULTS.networkMode) as NetworkMode,
      egress: [...new Set((s.network?.egress ?? []).map((e) => e.toLowerCase()))].sort(),
    },
    credentials: normalizeCredentials(s.network?.credentials ?? []),
    volumes: (s.volumes ?? [])
      .map((v) => ({ name: v.name, mountPath: cleanPath(v.mountPath), readOnly: v.readOnly ?? false, sizeBytes: diskBytes(v.size) }))
      .sort(byName),
    resources: {
      cpus: s.resources?.cpus ?? null,
      memoryBytes: parsedMemory?.ok ? parsedMemory.bytes : null,
      pids: s.resources?.pids ?? DEFAULTS.pids,
      diskBytes: diskBytes(s.resources?.disk),
    },
    deadlineSeconds: s.deadlineSeconds ?? null,
    retries: s.retries ?? DEFAULTS.retries,
    ttlSecondsAfterFinished: s.ttlSecondsAfterFinished ?? null,
    user: s.user === undefined ? null : parseUser(s.user),
    readOnlyRootFilesystem: s.readOnlyRootFilesystem ?? false,
    sandbox: s.sandbox ?? false,
    sidecars,
    grade: s.grade ? normalizeGrade(s.grade, resolved.gradeFixture ?? null, resolved.gradeBuild) : null,
    workspace: {
      export: s.workspace?.export ?? 'changes',
      exclude: [...(s.workspace?.exclude ?? [])],
      maxBytes: workspaceBytes(s.workspace?.maxBytes),
      maxFiles: s.workspace?.maxFiles ?? DEFAULTS.workspaceMaxFiles,
      gitignore: s.workspace?.gitignore ?? true,
    },
    harvest: {
      maxBytes: sizeOr(s.harvest?.maxBytes, DEFAULTS.harvestMaxBytes),
      maxFiles: s.harvest?.maxFiles ?? DEFAULTS.harvestMaxFiles,
    },
  };
}

/** A byte quantity (checked by semantic.ts), `or` where absent. */
function sizeOr(q: string | number | undefined, or: number): number {
  if (q === undefined) return or;
  const parsed = parseSize(q);
  return parsed.ok ? parsed.bytes : or;
}

/** sidecars[i].ready with its deadline (the schema lets exactly one of tcp, log and command through). */
function normalizeReady(r: NonNullable<RawSidecar['ready']>): SidecarReady {
  const deadlineSeconds = r.deadlineSeconds ?? DEFAULTS.sidecarReadySeconds;
  if (r.tcp !== undefined) return { tcp: r.tcp, deadlineSeconds };
  if (r.log !== undefined) return { log: r.log, deadlineSeconds };
  return { command: [...(r.command ?? [])], deadlineSeconds };
}

/** Credentials with their defaults, sorted by host. */
function normalizeCredentials(list: readonly RawCredential[]): CredentialSpec[] {
  return list.map(normalizeCredential).sort((a, b) => (a.host < b.host ? -1 : a.host > b.host ? 1 : a.port - b.port));
}

/** network.credentials[i] with its defaults; `host:port` split (its form checked by the schema). */
function normalizeCredential(c: RawCredential): CredentialSpec {
  const colon = c.host.lastIndexOf(':');
  let host = c.host.slice(0, colon).toLowerCase();
  if (host.endsWith('.')) host = host.slice(0, -1);
  return {
    host,
    port: Number(c.host.slice(colon + 1)),
    secret: c.secret,
    header: c.header ?? DEFAULTS.credentialHeader,
    format: c.format ?? DEFAULTS.credentialFormat,
    caSecret: c.caSecret ?? null,
  };
}

/** spec.workspace.maxBytes in bytes (checked by semantic.ts; the default where absent). */
function workspaceBytes(q: string | number | undefined): number {
  if (q === undefined) return DEFAULTS.workspaceMaxBytes;
  const parsed = parseSize(q);
  return parsed.ok ? parsed.bytes : DEFAULTS.workspaceMaxBytes;
}

/** spec.resources.disk in bytes (checked by semantic.ts), or null: no limit of its own. */
function diskBytes(q: string | number | undefined): number | null {
  if (q === undefined) return null;
  const parsed = parseDisk(q);
  return parsed.ok ? parsed.bytes : null;
}
