/**
 * The spec as berth works with it after loading: validated, defaults applied, paths resolved.
 * Everything downstream (desired state, planner, executor) sees only NormalizedAttempt.
 */

export type NetworkMode = 'none' | 'isolated' | 'bridge';

/** A position in a source file; line and col are 1-based. */
export interface SourcePos {
  /** Path as the user gave it / as found under the specs folder (relative to cwd when possible). */
  file: string;
  line: number;
  col: number;
}

/** Closed set of error codes; tests and `-o json` consumers branch on these. */
export type SpecErrorCode =
  | 'io' // file cannot be read
  | 'encoding' // not UTF-8
  | 'too-large' // file over the size cap
  | 'yaml-syntax' // YAML parse error
  | 'yaml-duplicate-key'
  | 'yaml-alias-limit' // alias bomb
  | 'yaml-too-deep' // nesting over the depth cap
  | 'yaml-tag' // custom/unknown tags, merge keys
  | 'not-a-mapping' // document is not a mapping
  | 'schema' // JSON Schema violation (type, enum, required, additionalProperties, pattern, bounds)
  | 'duplicate-name' // metadata.name used twice in the specs folder
  | 'path-escape' // fixture / fromFile / results resolves outside its root; a spec file links out of the folder
  | 'results-overlap' // two attempts' results folders are one, or one lies inside the other
  | 'missing-file' // fixture / fromFile does not exist
  | 'fixture-link' // fixture holds a link pointing outside itself
  | 'fixture-special' // fixture holds a device, fifo or socket
  | 'egress-mode' // egress without network.mode isolated
  | 'secret-ref' // env refers to an undeclared secret; duplicate secret names
  | 'quantity' // memory quantity cannot be parsed / out of range
  | 'sidecar' // sidecars without an isolated network, duplicate or reserved names
  | 'credential' // network.credentials: an undeclared secret, a host given twice or also in egress
  | 'matrix' // AttemptSet: empty or repeated axis values, bad include/exclude, too many children, clashing names
  | 'template' // AttemptSet: a `${{ }}` that names no axis or is not `matrix.<axis>`
  | 'git-secret' // a `fromFile` secret in specs from git (secrets do not live in repositories)
  | 'build'; // spec.build: its Dockerfile or .dockerignore cannot be used (the line and why)

/** Errors are data; the CLI formats them at the edge. */
export interface SpecError extends SourcePos {
  /** Field path in the document, dotted with [i] indices, e.g. `spec.resources.memory`; '' for the whole doc. */
  path: string;
  code: SpecErrorCode;
  message: string;
  /** The attempt the error belongs to, when the document got far enough to name one. */
  attempt?: string;
  /** The AttemptSet the error belongs to (an error of the set as a whole, or of one of its children). */
  set?: string;
}

export interface SecretRef {
  name: string;
  /** Environment variable on berth's side holding the value. */
  fromEnv?: string;
  /** Absolute, resolved path of the file holding the value. */
  fromFile?: string;
}

export interface VolumeMount {
  name: string;
  mountPath: string;
  readOnly: boolean;
  /** volumes[].size in bytes: the most the volume may hold; null: no size of its own (resources.disk still counts it). */
  sizeBytes: number | null;
}

/**
 * spec.network.credentials[i]: a header the egress proxy sets on the attempt's plain-HTTP requests
 * to `host`, sent on over TLS to `host:port`. The attempt never holds the secret.
 */
export interface CredentialSpec {
  /** Lower case, no trailing dot; never a wildcard. */
  host: string;
  port: number;
  /** Name of the spec.secrets entry whose value goes into the header. */
  secret: string;
  header: string;
  /** The header's value: `{}` is the secret's value, `{base64}` its base64 (for `Basic {base64}`). */
  format: string;
  /** Name of the spec.secrets entry holding PEM certificates to verify the upstream with, or null: the system's roots. */
  caSecret: string | null;
}

/** A container beside the main one on the attempt's isolated network. */
export interface SidecarSpec {
  name: string;
  image: string;
  command: string[] | null;
  env: Record<string, string>;
  /** VAR → secret name, opted into the sidecar's environment explicitly. */
  secretEnv: Record<string, string>;
  /** Names of spec.secrets delivered to this sidecar (and so not to the main container). */
  secrets: string[];
  /**
   * The sidecar's own way out through the egress proxy (normalized as network.egress), separate
   * from the attempt's. Absent when not written, so a spec from before it keeps its hash.
   */
  egress?: string[];
  /** The sidecar's own injected credentials (as spec.credentials); absent when not written. */
  credentials?: CredentialSpec[];
  /** When it counts as ready; absent when not written: once it has stayed up DEFAULTS.sidecarSettleMs. */
  ready?: SidecarReady;
}

/** sidecars[].ready: what shows the sidecar is ready, and how long berth waits for it. */
export type SidecarReady = (
  | { tcp: number } // a TCP connect to this port of the sidecar, on the attempt's network, is accepted
  | { log: string } // a line of its output (stdout or stderr) holds this text
  | { command: string[] } // this command, run in the sidecar, exits 0
) & { deadlineSeconds: number };

/**
 * spec.grade: a grader run after the attempt in a fresh container, from the fixture and the
 * attempt's exported changes. Not part of the spec hash: its own hash (src/spec/grade-hash.ts)
 * decides regrades.
 */
export interface NormalizedGrade {
  /** null: the attempt's image. With `build`: the image it makes. */
  image: string | null;
  /** grade.build: the grader's image is built (absent when not written). */
  build?: NormalizedBuild;
  command: string[];
  env: Record<string, string>;
  /** Absolute, resolved path of the grader's own fixture (given to the grader only), or null. */
  fixture: string | null;
  fixtureDigest: string | null;
  /** Globs (relative to workingDir) whose paths keep spec.fixture's content: the attempt's changes there are not graded. */
  protect: string[];
  deadlineSeconds: number | null;
  resources: { cpus: number | null; memoryBytes: number | null; pids: number };
  /** The grader has no network. */
  network: { mode: 'none' };
  /** always: every finished run; succeeded: only runs that Succeeded. */
  when: 'always' | 'succeeded';
}

/**
 * spec.build (grade.build): an image built from a Dockerfile, as loaded (docs/CONTRACT.md "Images
 * built from a Dockerfile"). The image it makes is the attempt's (grader's) `image`:
 * `berth-build/<16 hex of hash>` (constants.ts `buildTag`).
 */
export interface NormalizedBuild {
  /** Real path of the context folder (inside the specs folder). */
  context: string;
  /** The Dockerfile, relative to the context, forward slashes. */
  dockerfile: string;
  args: Record<string, string>;
  /** The stage built, or null: the last. */
  target: string | null;
  /** The build has the engine's default network (spec.network.mode bridge); otherwise none. */
  network: boolean;
  /**
   * The build hash (sha256 hex): the context's files after .dockerignore (names, modes,
   * contents: the Dockerfile and .dockerignore among them), the Dockerfile's path, args, target
   * and network (spec/build-context.ts). The only part the spec hash and grade hash count.
   */
  hash: string;
  /** The images its stages start FROM (meta ARGs expanded; `scratch` and earlier stages left out): pulled first, kept by image GC. */
  from: string[];
  /** The FROM images a `--platform=` names a platform for (not the engine's own): pulled for that platform. Absent: none. */
  platforms?: Record<string, string>;
}

/** One layer of a fixture: its real path on the host and its digest (fixture-digest.ts). */
export interface FixtureLayer {
  path: string;
  digest: string;
}

/** When berth pulls an image (docs/CONTRACT.md "Images from registries"). */
export type PullPolicy = 'IfNotPresent' | 'Always' | 'Never';

/**
 * The pull policies of an attempt's images, gathered from where the spec writes them
 * (`imagePullPolicy`, `grade.imagePullPolicy`, `sidecars[].imagePullPolicy`) into one field that
 * no hash counts: changing when berth pulls never re-runs nor regrades anything, and the sidecars'
 * and the grade's normalized forms (which their hashes cover) stay as they were.
 */
export interface PullPolicies {
  main: PullPolicy;
  /** The grader's (default: the attempt's). */
  grade: PullPolicy;
  /** By sidecar name (default: IfNotPresent). */
  sidecars: Record<string, PullPolicy>;
}

export interface NormalizedAttempt {
  apiVersion: string;
  kind: string;
  name: string;
  labels: Record<string, string>;
  /** With `build`: the image it makes (`berth-build/<16 hex>`). */
  image: string;
  pullPolicies: PullPolicies;
  /** spec.build: the image is built from a Dockerfile (absent when not written). */
  build?: NormalizedBuild;
  /** null: the image's default command. */
  command: string[] | null;
  workingDir: string;
  /** Plain environment; never holds secret values. */
  env: Record<string, string>;
  /** Environment variables whose value is a secret, opted in explicitly: VAR -> secret name. */
  secretEnv: Record<string, string>;
  secrets: SecretRef[];
  /** Absolute, resolved path of the fixture folder (or file), or null; with layers, the first layer's (every layer is in fixtureLayers). */
  fixture: string | null;
  /**
   * sha256 over the fixture's file tree (paths, modes, contents), or null. With layers, over the
   * layers' digests in order (fixture-digest.ts `layersDigest`); one layer has that layer's digest.
   */
  fixtureDigest: string | null;
  /** Every layer of the fixture, in the order copied in (a single fixture is one layer); empty without a fixture. */
  fixtureLayers: FixtureLayer[];
  /** Results folder relative to the results root (already checked to stay inside it). */
  results: string;
  network: { mode: NetworkMode; egress: string[] };
  /** spec.network.credentials, sorted by host (kept beside `network` so its hashed form stays the first hash's). */
  credentials: CredentialSpec[];
  volumes: VolumeMount[];
  resources: {
    /** Fractional CPUs, or null for no limit. */
    cpus: number | null;
    /** Bytes, or null for no limit. */
    memoryBytes: number | null;
    pids: number;
    /** resources.disk in bytes: writable layer, results and volumes together; null: none (or --default-disk). */
    diskBytes: number | null;
  };
  deadlineSeconds: number | null;
  retries: number;
  ttlSecondsAfterFinished: number | null;
  /** The numeric uid:gid the main container runs as, or null: the image's user. */
  user: { uid: number; gid: number } | null;
  /** The main container's root filesystem is read-only (with a tmpfs at /tmp). */
  readOnlyRootFilesystem: boolean;
  /**
   * A sandbox (docs/CONTRACT.md, "Exec, copy and sandboxes"): its main container runs berth's own
   * waiting process instead of a command of the image's, until released or its deadline.
   */
  sandbox: boolean;
  /** Sorted by name. */
  sidecars: SidecarSpec[];
  /** The grader, or null: no grade (the run's own exit code, or its score file, decides). */
  grade: NormalizedGrade | null;
  /** What of the workspace comes home after the run (src/workspace/export.ts); not hashed. */
  workspace: WorkspaceExportSpec;
  /** What a run's results folder keeps at most (src/harvest/manifest.ts); not hashed. */
  harvest: HarvestCaps;
}

/** spec.harvest, defaults filled in: regular files' bytes and entries a run's results folder keeps at most. */
export interface HarvestCaps {
  maxBytes: number;
  maxFiles: number;
}

/** spec.workspace, defaults filled in. */
export interface WorkspaceExportSpec {
  export: 'changes' | 'none';
  /** The user's globs only (the defaults, DEFAULTS.workspaceExclude, always apply too), in the order written. */
  exclude: string[];
  maxBytes: number;
  maxFiles: number;
  /**
   * The fixture's `.gitignore` files leave out what they match (src/workspace/gitignore.ts);
   * default true. A run's recorded settings without it (begun before it existed) read true.
   */
  gitignore: boolean;
}

/** An AttemptSet's own settings, shared by its children; none of it is part of a child's spec hash. */
export interface SetPolicy {
  name: string;
  /** Axis names in the order the spec declares them. */
  axes: string[];
  /** Children of the set running at once, at most; null: no limit of its own. */
  maxParallel: number | null;
  /** `spec.maxChildren`: the children the set may have, raised on purpose above SET_LIMITS.maxChildren; absent: that default. */
  maxChildren?: number;
  failFast: boolean;
  /** Infrastructure failures after which no more children are admitted; null: no limit. */
  maxFailed: number | null;
  /** How a run is scored; null: exit code 0 is a pass. */
  score: { file: string; pass: number } | null;
  /**
   * Task outcomes (TASK_FAILURES: TimedOut, OOMKilled, DiskLimitExceeded, Error) this set counts
   * as infrastructure outcomes instead of failures (`score.infra`); empty by default.
   */
  infra: readonly string[];
  /** Where the set is declared. */
  source: SourcePos;
  /**
   * sha256 of the set's `spec.template` as written (canonical JSON, `${{ }}` unrendered): what
   * pins made before `pinKey` held under (status/pins.ts).
   */
  templateHash?: string;
  /**
   * What "the set's spec" is for its pinned images (status/pins.ts; spec/hash.ts templatePinKey):
   * its template less what no child's spec hash reads. The matrix, include, exclude and the set's
   * own settings are not in it either: more children, another maxParallel, a workspace.exclude
   * edit keep the pin.
   */
  pinKey?: string;
}

/** What makes a LoadedSpec a child of an AttemptSet. */
export interface SetMember {
  set: SetPolicy;
  /** Axis name → the child's value, as text. */
  coords: Record<string, string>;
  /** Position in the set's expansion order (axes as declared, values as listed, includes last): admission order. */
  index: number;
}

/** An AttemptSet as loaded: its settings and the names of its children (loaded or not). */
export interface LoadedSet {
  policy: SetPolicy;
  /** Every child name the set declares, in expansion order; empty when its matrix could not be expanded. */
  children: string[];
  /** Each child's coordinates (axis → value), as `children` (also for children that did not load). */
  coords: Record<string, string>[];
  /** The set is valid as a whole (its children may still be invalid one by one). */
  valid: boolean;
  /**
   * Its file is broken now (or its `fromDir` missing): this is its last good expansion
   * (last-good.ts), held by these errors. Absent for a set as loaded.
   */
  held?: SpecError[];
}

export interface LoadedSpec {
  /** Set for children of an AttemptSet. */
  set?: SetMember;
  /** Where the document starts (its metadata.name node when present). */
  source: SourcePos;
  /** Spec file relative to the specs folder, forward slashes; stable across working directories. */
  relFile: string;
  spec: NormalizedAttempt;
  /** sha256 hex of the canonical normalized spec (see hash.ts). */
  hash: string;
  /** Specs from git: the commit the spec was read from (never part of the hash). */
  revision?: string;
  /**
   * A set's child whose spec is broken now (its set's file, its fixture): this is its last good
   * spec (last-good.ts), held by these errors. What runs goes on under it; no new run starts.
   */
  held?: SpecError[];
}

export interface LoadResult {
  specs: LoadedSpec[];
  errors: SpecError[];
  /**
   * Attempt names that some document declares but that did not load (invalid, duplicated).
   * What already runs under these names must be left exactly as it is.
   */
  protectedNames: Set<string>;
  /**
   * Spec files (relative to the specs folder) that could not be read or parsed far enough to know
   * which attempts they declare. Attempts whose resources carry one of these as their source label
   * are protected too.
   */
  unreadableFiles: Set<string>;
  /**
   * Folders under the specs folder (relative, forward slashes) that could not be read: attempts
   * whose spec file lies under one are protected the same way.
   */
  unreadableFolders: Set<string>;
  /**
   * Set when the specs root itself is missing, is not a folder or cannot be read (or loading
   * failed as a whole): nothing may be planned from such a load, since it knows no attempt.
   */
  rootError?: SpecError;
  /** AttemptSets by name (those whose name could be read). */
  sets?: Map<string, LoadedSet>;
  /** Specs from git: the commit this load read. */
  revision?: string;
}
