/**
 * One place for every name users and scripts depend on: label keys, phases, reasons,
 * exit codes and defaults (CONTRACT.md). Nothing else in the code spells these strings.
 */

/** The version of docs/CONTRACT.md berth implements (`berth version -o json`). */
export const CONTRACT_VERSION = 4;
export const API_VERSION = 'berth.dev/v1';
/**
 * The Docker Engine API versions berth talks (src/engine/docker/api-version.ts): the oldest is
 * that of the oldest engine it is tested on, the newest that of the newest (the compatibility
 * matrix, test/support/engine-matrix.ts). berth talks min(the engine's, newest); an engine older
 * than the oldest is refused.
 */
export const ENGINE_API = { oldest: '1.41', oldestEngine: 'Docker Engine 20.10', newest: '1.51', newestEngine: 'Docker Engine 28.5' } as const;
export const KIND_ATTEMPT = 'Attempt';
export const KIND_ATTEMPT_SET = 'AttemptSet';

/**
 * Spec labels every child of an AttemptSet carries (besides the set's own labels and one
 * `<axis>=<value>` label per axis whose value is a valid label value): the set's name, so
 * `berth get -l berth.dev/set=swe-lite` selects a set's children.
 */
export const SET_LABEL = 'berth.dev/set';

/**
 * The form of an AttemptSet child's name before names were readable for any value
 * (`<set>--<16 hex>`, spec/set-expand.ts legacyChildName): a record under such a name keeps it.
 */
export const LEGACY_CHILD_NAME = /--[0-9a-f]{16}$/;

/** Limits on an AttemptSet, so a typo cannot flood the engine. */
export const SET_LIMITS = {
  /** Children one set may expand to unless its `spec.maxChildren` says more (a guard against a typo). */
  maxChildren: 10_000,
  /** The most `spec.maxChildren` may say (the schema's maximum). */
  maxChildrenCeiling: 1_000_000,
  /** Children of one set whose rendered spec is invalid reported one by one; the rest are counted. */
  maxChildErrors: 20,
  /** Bytes of a score file read at most. */
  maxScoreBytes: 4096,
} as const;

/** Bounds on what the fleet report (src/report) embeds, so attempt-controlled strings cannot make the page huge. */
export const REPORT_LIMITS = {
  /** Attempts in one report (the rest are counted, not shown). */
  attempts: 200_000,
  /**
   * Attempts up to which the page draws each one itself (a table row and a timeline row in the
   * HTML); above it (issue 55) the page holds them as compact columns and its script shows the
   * table a page at a time, and the timeline shows the slots held and each set's span.
   */
  detailed: 2_000,
  /** Rows and columns of one set's heatmap at most; more are grouped into bands of neighbours. */
  heatRows: 100,
  heatCols: 100,
  /** Points of the slots-held line at most (the steps of a large fleet are sampled down to this). */
  timelinePoints: 1_000,
  /** Characters of a name, a key (label or axis), a value (label, axis value, reason), a message. */
  name: 253,
  key: 120,
  value: 200,
  message: 400,
  /** Characters of a link into a run folder (a longer one is left out). */
  path: 1024,
  /** Labels or axis values of one attempt. */
  entries: 32,
  /** Graders of one run drawn on the timeline (its latest). */
  grades: 8,
} as const;

/** berth's configuration file (src/cli/config.ts): flags' defaults, found in the working directory or beside the specs folder. */
export const CONFIG_FILE = 'berth.yaml';

/** The report's file when `berth report` is given no -o: at the results root, where its links work. */
export const REPORT_FILE = 'report.html';

/** Version of the normalized form that the spec hash covers; bump when normalization changes. */
export const SPEC_HASH_SCHEMA = 1;

/** Labels on every resource berth creates (reverse-DNS). */
export const LABELS = {
  /** "true" on everything berth manages. */
  managed: 'dev.berth.managed',
  /** The reconciler instance (`--instance`) that owns the resource. */
  instance: 'dev.berth.instance',
  /** The attempt's metadata.name. */
  attempt: 'dev.berth.attempt',
  /** sha256 of the normalized spec the resource was made for. */
  specHash: 'dev.berth.spec-hash',
  /** What the resource is to the attempt: see COMPONENTS. */
  component: 'dev.berth.component',
  /** Which run of the attempt (1 + retries used) made the resource. */
  run: 'dev.berth.run',
  /** The spec file (relative to the specs folder) that declared the attempt. */
  source: 'dev.berth.source',
  /** For sidecars: the sidecar's name in the spec (egress-proxy for berth's proxy). */
  sidecar: 'dev.berth.sidecar',
  /** For volumes: the volume's name in the spec. */
  volume: 'dev.berth.volume',
  /**
   * On containers: random, fresh for every create. A container's labels include its image's;
   * one whose nonce equals its image's inherited it (see src/ownership.ts).
   */
  nonce: 'dev.berth.nonce',
  /** On a grader container (component `grader`): which grade of its run (`grade-<k>`) it makes. */
  grade: 'dev.berth.grade',
  /**
   * On an image berth built from a Dockerfile: its build hash (docs/CONTRACT.md "Images built
   * from a Dockerfile"). Containers made of it inherit it; it is no ownership label (which instance
   * built it is in the build's record, `<state>/builds/<hash>.json`: a second label would cost
   * the classic builder a step of its own).
   */
  build: 'dev.berth.build',
} as const;

/**
 * Images built from a Dockerfile: the repository a build is tagged in (`berth-build/<16 hex of
 * its build hash>`), and the engine-side lock of one build (a volume, like the instance's lock:
 * neither managed nor of an instance, so observe and `clean` never see it).
 */
export const BUILD = {
  repository: 'berth-build',
  hexLength: 16,
  lockPrefix: 'berth.build-lock.',
  /** Below the state folder: `<hash>.log` (the build's output) and `<hash>.json` (how it ended). */
  dir: 'builds',
  /** Image GC's removals, one JSON line each (`berth images`, `berth events`). */
  gcLog: 'images-gc.jsonl',
} as const;

/**
 * Labels of a build's engine-side lock (the volume `berth.build-lock.<16 hex>`, src/build/lock.ts):
 * the build hash and its holder (as LOCK_LABELS name a holder), never a secret. Neither managed nor
 * of an instance: observe and `clean` never see it.
 */
export const BUILD_LOCK_LABELS = {
  lock: 'dev.berth.build-lock',
  /** The instance whose berth holds it (for messages). */
  instance: 'dev.berth.build-lock.instance',
} as const;

/** The tag of the image built for build hash `hash` (sha256 hex). */
export const buildTag = (hash: string): string => `${BUILD.repository}/${hash.slice(0, BUILD.hexLength)}`;

/**
 * Labels of the engine-side instance lock (a volume, see src/status/engine-lock.ts). On purpose
 * neither `dev.berth.managed` nor `dev.berth.instance`: the lock is no attempt's resource, so
 * observe, garbage collection and `clean` never see it (and `clean` never removes the lock it holds).
 * The holder's identity, never a secret.
 */
export const LOCK_LABELS = {
  /** On the lock volume: the instance it locks. */
  lock: 'dev.berth.lock',
  /** On a takeover claim: the instance whose stale lock is being taken over. */
  claim: 'dev.berth.lock-claim',
  token: 'dev.berth.lock.token',
  pid: 'dev.berth.lock.pid',
  hostname: 'dev.berth.lock.hostname',
  bootId: 'dev.berth.lock.boot-id',
  processStart: 'dev.berth.lock.process-start',
  pidNamespace: 'dev.berth.lock.pid-namespace',
  stateDir: 'dev.berth.lock.state-dir',
  command: 'dev.berth.lock.command',
  startedAt: 'dev.berth.lock.started-at',
} as const;

/**
 * Labels of an instance's source binding (a volume, see src/status/source-binding.ts): which
 * specs root or git URL and path the instance is reconciled from. Like the lock, neither
 * `dev.berth.managed` nor `dev.berth.instance`: observe, garbage collection and `clean`'s sweep
 * never see it; `clean` removes it by name once the instance is gone. No credentials (a git URL
 * with a password is refused before it gets here).
 */
export const BINDING_LABELS = {
  /** On the binding volume: the instance it binds. */
  binding: 'dev.berth.binding',
  /** `dir` (a specs folder) or `git`. */
  kind: 'dev.berth.binding.kind',
  /** The specs folder's real path, or the path inside the git repository ('' for its root). */
  path: 'dev.berth.binding.path',
  /** The git URL (kind `git`). */
  url: 'dev.berth.binding.url',
  /** ISO time the instance was bound (or moved) to this source. */
  boundAt: 'dev.berth.binding.bound-at',
  /** The host berth ran on when it bound the instance (shown, never compared: a container's hostname changes every run). */
  hostname: 'dev.berth.binding.hostname',
} as const;

export const COMPONENTS = {
  main: 'main',
  network: 'network',
  egressNetwork: 'egress-network',
  volume: 'volume',
  proxy: 'egress-proxy',
  sidecar: 'sidecar',
  /** spec.grade's container: made fresh after the run, from the fixture and the exported changes (never the attempt's container). */
  grader: 'grader',
} as const;
export type Component = (typeof COMPONENTS)[keyof typeof COMPONENTS];

export const PHASES = ['Pending', 'Running', 'Succeeded', 'Failed', 'TimedOut', 'Invalid', 'Blocked'] as const;
export type Phase = (typeof PHASES)[number];

/** Reasons of events that are not an attempt's (`berth events`). */
export const EVENT_REASONS = {
  /** Image GC removed an image berth pulled or built (controller/image-gc.ts). */
  imageRemoved: 'ImageRemoved',
} as const;

/** Phases after which an attempt never runs again unless its spec changes or retries allow. */
export const FINISHED_PHASES: ReadonlySet<Phase> = new Set(['Succeeded', 'Failed', 'TimedOut']);

/** Engine states in which a container counts as running. */
export const RUNNING_STATES: ReadonlySet<string> = new Set(['running', 'paused', 'restarting']);

/** The closed set of status reasons (docs/CONTRACT.md lists them, one line each). */
export const REASONS = {
  /** Pending: its run's resources are being made (the intent is recorded). */
  provisioning: 'Provisioning',
  error: 'Error',
  oomKilled: 'OOMKilled',
  /** Failed: the run outgrew its `resources.disk` (a task outcome, as OOMKilled). */
  diskLimitExceeded: 'DiskLimitExceeded',
  attestationFailed: 'AttestationFailed',
  lost: 'Lost',
  /**
   * Infrastructure deaths (see src/plan/exit-outcome.ts): the engine stopped or lost the run's
   * container when it restarted, or refused to start the container (after a crash, a container
   * the engine half-started can never start again). They count against --infra-retries, not
   * against the spec's `retries`.
   */
  engineRestarted: 'EngineRestarted',
  startFailed: 'StartFailed',
  deadlineExceeded: 'DeadlineExceeded',
  nameConflict: 'NameConflict',
  createFailed: 'CreateFailed',
  invalidSpec: 'InvalidSpec',
  duplicateName: 'DuplicateName',
  waitingForSlot: 'WaitingForSlot',
  completed: 'Completed',
  /** Failed: the spec changed while the run was going; the run is stopped and a new one starts. */
  replaced: 'Replaced',
  /** Failed: the spec was deleted while the run was going. */
  deleted: 'Deleted',
  /** Blocked: a secret cannot be read from berth's environment or its file. */
  secretMissing: 'SecretMissing',
  /**
   * Blocked: an image the attempt needs (its own, a sidecar's, the egress proxy's; for a set's
   * child, the id its set pinned) is not on the engine. Found before anything is made; looked at
   * again at every pass (an image event wakes the controller).
   */
  imageMissing: 'ImageMissing',
  /** Pending: the attempt's image is being pulled (or waits its turn to be). */
  pulling: 'Pulling',
  /** Blocked: a pull of the attempt's image failed; tried again on the image's back-off clock. */
  imagePullBackOff: 'ImagePullBackOff',
  /** Pending: the attempt's image is built from its Dockerfile (or waits its turn, --max-builds). */
  building: 'Building',
  /**
   * Blocked: the build of the attempt's image failed (the message names the Dockerfile line and
   * the last output lines); built again only when its build hash changes, or on `berth rerun`.
   */
  buildFailed: 'BuildFailed',
  /**
   * Blocked: a path berth reads or writes for the attempt (a fixture, a secret file, its run
   * folder) holds a symbolic link or no longer qualifies as it did when checked; nothing is followed.
   */
  unsafePath: 'UnsafePath',
  /** Failed: the egress proxy did not come up (or could not be started again). */
  proxyFailed: 'ProxyFailed',
  /** Failed: a sidecar did not come up (or could not be started again). */
  sidecarFailed: 'SidecarFailed',
  /** `get`: the attempt's status record is damaged; reconcile sets it aside and rebuilds it. */
  recordDamaged: 'RecordDamaged',
  /** An AttemptSet child not admitted because a sibling's task failed and the set has failFast. */
  failFast: 'FailFast',
  /** An AttemptSet child not admitted because the set reached maxFailed infrastructure failures. */
  maxFailedReached: 'MaxFailedReached',
  /** An AttemptSet child waiting because its set already runs maxParallel children. */
  waitingForSet: 'WaitingForSet',
  /** An AttemptSet child with a score whose run left no readable score file: an infrastructure outcome, never 0. */
  scoreMissing: 'ScoreMissing',
  /** `get`: a spec with no status record yet (no reconcile has seen it). */
  notReconciled: 'NotReconciled',
  /**
   * The run ended (its outcome is recorded in `ended`) and its results are being harvested: the
   * phase becomes the outcome's once the harvest is done.
   */
  harvesting: 'Harvesting',
  /** The run ended but its harvest failed (the message says why); the next pass tries it again. */
  harvestFailed: 'HarvestFailed',
  /**
   * Succeeded: the run exited 0 but its results were past spec.harvest's caps; the harvest kept
   * what fits and the manifest lists the rest. Counts as passed (the attempt's own process did
   * what it should; the caps are berth's). A run that failed keeps its own reason, and says
   * ResultsTruncated in its warnings.
   */
  resultsTruncated: 'ResultsTruncated',
  /**
   * Pending: a file system holding the engine's data root or the results root is below its
   * free-space or free-inode threshold (`--disk-pressure-*`); new runs wait, running ones go on.
   * An infrastructure hold, never a failure: the run starts once space is back.
   */
  diskPressure: 'DiskPressure',
  /**
   * Blocked (`--backend swarm`): no swarm node may run the attempt (one that does not enforce a
   * hardening, has no engine berth can reach, ...), or the one node holding the attempt's volumes
   * may not run it now (or has left the swarm); the message names each node and what it lacks.
   */
  nodeRefused: 'NodeRefused',
  /**
   * A grade (spec.grade) that could not judge the run: the grader could not be created or
   * started, or ended without the score its set expects. An infrastructure outcome: the score is
   * missing, never 0. On the grade record (status `grades`), and the set's class.
   */
  gradeFailed: 'GradeFailed',
  /** A grader that ran past grade.deadlineSeconds: stopped; an infrastructure outcome, as GradeFailed. */
  gradeTimedOut: 'GradeTimedOut',
} as const;

/** `--backend swarm` (src/backend/swarm). */
export const SWARM = {
  /**
   * Node label (set by the operator: `docker node update --label-add dev.berth.engine=ADDRESS`):
   * where berth reaches the node's own engine, through which fixtures go in and results come back.
   */
  engineLabel: 'dev.berth.engine',
  /** On berth's own helpers of a run on a node (the prepared container, its volumes): which run. */
  runLabel: 'dev.berth.swarm-run',
  /**
   * On an attempt's volume (spec.volumes) and on its record on the manager's engine: the id of the
   * swarm node that holds it (node-local, as every volume), where the attempt's runs then go.
   */
  volumeNodeLabel: 'dev.berth.swarm-node',
  /** On a run's task's container (made by the node for the service): which run. */
  taskLabel: 'dev.berth.swarm-task',
  /** On a run's service: the results folder (where berth runs) its results are brought to. */
  resultsLabel: 'dev.berth.results-dir',
  /** On a run's swarm secrets: the file name under /run/secrets, and its owner and mode. */
  secretFileLabel: 'dev.berth.secret-file',
  /**
   * On a run's prepared container: the network its task attaches to (JSON: network, aliases,
   * upstream DNS; `private`: the run's own internal overlay, which stands for `none`).
   */
  netLabel: 'dev.berth.swarm-net',
  /** On the record of a network a run's task is to be attached to besides its first (networks.connect before the start): that network. */
  attachLabel: 'dev.berth.swarm-attach',
  /** Set by the swarm on a task's container: its service's id, and its name. */
  serviceIdLabel: 'com.docker.swarm.service.id',
  serviceNameLabel: 'com.docker.swarm.service.name',
  /** How long a started run's task may take to get its container on its node. */
  taskStartMs: 60_000,
  /**
   * While a started run's task's container has not started, how often the task is looked at
   * (tasks emit no events): the container's own `create` and `start` are known at once from its
   * node's events; the look is for a task that ends without one, or a node whose events did not come.
   */
  taskPollMs: 1000,
  /** On a hardening probe's service: the node it checks. */
  probeLabel: 'dev.berth.probe',
  /** On a hardening probe's service: the berth process that made it (`<hostname>/<pid>`), so one left by a killed berth is told from one under way. */
  probeOwnerLabel: 'dev.berth.probe-owner',
  /** On a sidecar's tcp probe container on its node (backend/swarm/reach.ts): the run it probes, removed with it. */
  tcpProbeLabel: 'dev.berth.swarm-tcp-probe',
  /** How long a run's node may be down before the run counts as lost (Failed/Lost; retries apply). */
  lostGraceMs: 15_000,
  /** How long one count of a node engine's disk use (GET /system/df) serves the runs on that node (one disk-meter interval's look at them). */
  diskUseMaxAgeMs: 1000,
  /** How long one list of the swarm's nodes serves (the calls of one pass, one create and start). */
  nodesFreshMs: 500,
  /** How long a node's hardening probe may take (its task to run and end). */
  probeTimeoutMs: 60_000,
} as const;

export const EXIT = {
  ok: 0,
  failed: 1,
  usage: 2,
  attemptsFailed: 3,
  /** `berth plan --detailed-exitcode` only: the plan has changes. */
  changesPending: 4,
  /** With `--wait` (and `berth wait`): an attempt ended with an infrastructure outcome (wins over attemptsFailed). */
  infraOutcomes: 5,
  /** `berth compare --fail-on regression`: a pass rate fell with p < --alpha. */
  regression: 3,
} as const;

/**
 * What the attempt's own process did, named as the status says it: the task outcomes that count
 * as failures in pass rates (the phase TimedOut, the reasons OOMKilled, DiskLimitExceeded and
 * Error, a non-zero exit). The only names an AttemptSet's `score.infra` may move to
 * infrastructure (sets/outcome.ts); everything else that ends a run otherwise is infrastructure.
 */
export const TASK_FAILURES: readonly string[] = ['TimedOut', REASONS.oomKilled, REASONS.diskLimitExceeded, REASONS.error];

/**
 * `--fail-on` (`reconcile --wait`, `wait`): which outcomes make the exit code non-zero. `failed`:
 * task failures (3) and infrastructure outcomes (5); `infra`: only infrastructure outcomes;
 * `none`: neither (berth's own errors still exit 1 or 2).
 */
export const FAIL_ON = ['failed', 'infra', 'none'] as const;
export type FailOn = (typeof FAIL_ON)[number];

/** `berth compare --fail-on`: `regression` (exit 3 when a pass rate fell with p < --alpha) or `none`. */
export const COMPARE_FAIL_ON = ['regression', 'none'] as const;

/**
 * The `schemaVersion` of each JSON document berth writes or prints. A reader upgrades an older one
 * and refuses a newer one, saying which berth wrote it (never taking it for damage).
 */
export const SCHEMA_VERSIONS = {
  /** A status record (`<state>/<instance>/attempts/<name>.json`, `status.json`); one written before records carried it is version 1. */
  statusRecord: 2,
  /** `get -o json|yaml` (and `get -w -o json`'s lines), `get --sets -o json|yaml`. */
  get: 1,
  /** `plan -o json`. */
  plan: 1,
  /** `validate -o json`. */
  validate: 1,
  /** `events -o json` (each line). */
  events: 1,
  /** `version -o json`. */
  version: 1,
  /** `source -o json`. */
  source: 1,
} as const;

/**
 * `berth compare` (sets/compare.ts, sets/paired.ts): the JSON's schema version, the significance
 * level of `--fail-on regression` (`--alpha`), the interval's level, the bootstrap's resamples,
 * and its generator's fixed state (xoshiro128**: the first fractional bits of φ, π, e and √2,
 * numbers nobody chose), so the same input always gives the same interval.
 */
export const COMPARE = {
  schemaVersion: 1,
  alpha: 0.05,
  level: 0.95,
  resamples: 2000,
  seed: [0x9e3779b9, 0x243f6a88, 0xb7e15162, 0x6a09e667] as const,
  /** Cells (or children) each list shows in text and Markdown; the rest are counted (JSON has all). */
  listed: 20,
} as const;

/** A command stopped by SIGINT or SIGTERM exits with the shell's 128 + signal number (src/cli/interrupt.ts). */
export const SIGNAL_EXIT = { SIGINT: 130, SIGTERM: 143 } as const;

/** What `berth images` says of an image the specs need (docs/CONTRACT.md "Images from registries"). */
export const IMAGE_STATES = { present: 'Present', missing: 'Missing', pulling: 'Pulling', pullBackOff: 'PullBackOff' } as const;
export type ImageState = (typeof IMAGE_STATES)[keyof typeof IMAGE_STATES];

export const DEFAULTS = {
  /** An engine event stream that broke is connected again after this back-off (ms), doubling to its max (the engine's, each swarm node's, the
   * manager's node events). */
  streamRetryMs: { first: 250, max: 10_000 },
  /** A fixture file larger than this is streamed into the archive from its open handle, not read whole. */
  fixtureInlineFileBytes: 1024 * 1024,
  /**
   * The packed fixture layers kept on disk (`<state>/cache/fixtures/`, pack/fixture-cache.ts)
   * take at most this many bytes; the least recently used go first (`--fixture-cache-size`,
   * BERTH_FIXTURE_CACHE_SIZE; 0: none kept, every copy-in packs its own).
   */
  fixtureCacheBytes: 4 * 1024 ** 3,
  /** Where, below the state folder, packed fixture layers are kept. */
  fixtureCacheDir: 'cache/fixtures',
  /**
   * A fixture file larger than this (its length: a sparse file's holes count, as the archive that
   * copies it in carries them as zeros) is refused when the spec is loaded, from its stat alone.
   */
  maxFixtureFileBytes: 8 * 1024 * 1024 * 1024,
  /** A build context whose files after `.dockerignore` hold more than this is refused when the spec is loaded (nothing is sent). */
  maxBuildContextBytes: 2 * 1024 * 1024 * 1024,
  /** A Dockerfile or `.dockerignore` larger than this is refused when the spec is loaded. */
  maxDockerfileBytes: 1024 * 1024,
  /** `--max-builds`: image builds under way at once. */
  maxBuilds: 1,
  /** `--build-timeout`: a build still going after this is stopped (BuildFailed). */
  buildTimeoutMs: 30 * 60_000,
  /** A build's output lines a BuildFailed message quotes (its last ones). */
  buildFailedLines: 10,
  /** How often a build under way is measured against its disk limit and the disk's pressure mark. */
  buildDiskIntervalMs: 1_000,
  /** `--image-gc-high`, `--image-gc-low` (percent of the engine's data root's file system used), `--image-gc-min-age`. */
  imageGcHighPercent: 85,
  imageGcLowPercent: 80,
  imageGcMinAgeMs: 2 * 60_000,
  /** How often the controller looks at the data root's use for image GC. */
  imageGcIntervalMs: 30_000,
  /** Images berth itself runs, never collected (and `--egress-proxy-image`). */
  ownImages: ['berth/egress-proxy:local', 'berth/busybox:local', 'berth/berth:local'] as readonly string[],
  specsDir: 'specs',
  stateDir: '.berth',
  instance: 'default',
  workingDir: '/workspace',
  resultsMount: '/results',
  /** With spec.readOnlyRootFilesystem: the tmpfs the main container gets, and its mount options. */
  readOnlyTmp: '/tmp',
  readOnlyTmpOptions: 'rw,nosuid,nodev,mode=1777',
  secretsDir: '/run/secrets',
  networkMode: 'none',
  pids: 512,
  retries: 0,
  /** Automatic re-runs after infrastructure deaths (EngineRestarted, StartFailed), per spec hash: `--infra-retries`. */
  infraRetries: 2,
  /** Engine operations in flight at once: measured best on a 2-core box (ENGINE.md: 8 in flight). */
  concurrency: 8,
  /** Grace between TERM and KILL when a deadline passes or an attempt is stopped. */
  stopGraceSeconds: 10,
  /** How often a controller checks that it still holds the instance's locks. */
  lockCheckSeconds: 10,
  /** The egress proxy: image, port, and how long it may take to say it listens. */
  egressProxyImage: 'berth/egress-proxy:local',
  egressProxyPort: 3128,
  egressProxyReadySeconds: 15,
  /** network.credentials: the header set when none is written, and its value (`{}`: the secret's value). */
  credentialHeader: 'Authorization',
  credentialFormat: 'Bearer {}',
  /** How long a sidecar without `ready` must stay up after its start to count as ready (the fallback). */
  sidecarSettleMs: 200,
  /** How long berth waits for a sidecar's `ready` (tcp, log or command) when it sets no deadlineSeconds. */
  sidecarReadySeconds: 30,
  /** How often a `ready` tcp or command probe is tried again until it passes or its deadline. */
  sidecarProbeIntervalMs: 250,
  /**
   * How long one `ready` tcp probe run by the backend (probeTcp: a swarm's overlay, which berth
   * cannot reach) keeps trying before berth looks again whether the sidecar still runs.
   */
  sidecarBackendProbeMs: 5000,
  /**
   * The upstream DNS server of containers on an attempt's internal network: an address that is
   * never routed (TEST-NET-1, RFC 5737), so nothing answers lookups of outside names. Without
   * it, engines before 23.0.11 / 25.0.4 / 26.0 forward such lookups from the host's namespace
   * when the host's resolver is on loopback (systemd-resolved's 127.0.0.53): a way out of the
   * internal network, through DNS (CVE-2024-29018). Names on the attempt's network (its
   * sidecars, the egress proxy) still resolve: the engine answers those itself.
   */
  internalDns: ['192.0.2.53'] as readonly string[],
  /** A temp file of an atomic write this old is left over from an interrupted write, whoever wrote it. */
  staleTempMs: 10 * 60_000,
  /**
   * How long one engine call may wait for the engine's answer (`--engine-timeout`). A stop
   * waits its grace period on top; a copy into a container counts from the last chunk the
   * engine read; a stream (events, logs -f) counts until the engine answers.
   */
  engineTimeoutMs: 30_000,
  /** How long reconcile's host check waits for the engine's /info (its isolation): past it, it warns and goes on (cli/commands/host-check.ts). */
  hostCheckTimeoutMs: 10_000,
  /** spec.imagePullPolicy (and the grader's, the sidecars'). */
  imagePullPolicy: 'IfNotPresent' as 'IfNotPresent' | 'Always' | 'Never',
  /** `--max-pulls`: pulls under way at once. */
  maxPulls: 2,
  /** A prefetch waits while the controller starts runs (their create and start beside a pull's extraction are slow), at most this long. */
  prefetchYieldMs: 2_000,
  /** `--pull-retries`: under `--once --wait`, failed pulls of an image (rate-limit waits not counted) after which its attempts settle Blocked. */
  pullRetries: 3,
  /** One back-off clock per image: the first wait after a failed pull, doubling up to the max (kubelet's). */
  pullBackoffBaseMs: 10_000,
  pullBackoffMaxMs: 300_000,
  /** How often the pulls under way are written to `<state>/<instance>/pulls.json` (describe, images, the TTY line). */
  pullStateWriteMs: 1_000,
  /**
   * A controller stopped while it takes its instance's locks waits this long for the lock's
   * engine calls in flight, then gives them up (an engine that answers only its ping).
   */
  stopGraceMs: 1_000,
  /**
   * A run that ended by SIGKILL (137) with no `OOMKilled` on its container is looked at again for
   * an `oom` event until this long after its end: dockerd can report the exit before it handles
   * the kernel's OOM kill that caused it (seen 490 ms after the `die` on a quiet machine, and past
   * 2 s at load 25 on 2 cores, where a 2 s window recorded an OOM kill as Error). Only a SIGKILL
   * exit with no flag waits for it, and only until the engine's clock has passed the window.
   */
  lateOomMs: 5_000,
  /** `berth wait` with nothing reconciling the instance into its state folder ends after this (a writer started beside it takes its locks meanwhile). */
  unreconciledWaitGraceMs: 5_000,
  /**
   * What berth keeps of a container's log in `logs.txt` (and each sidecar's): the first and the
   * last half of this many bytes, with a marker line where the middle was cut (`--log-max-bytes`).
   */
  logMaxBytes: 32 * 1024 * 1024,
  /**
   * Secret values shorter than this are not redacted from what berth writes (every short word of
   * a log would go); the run's record says so (`redaction.notRedacted`, a warning).
   */
  redactMinBytes: 4,
  /**
   * Nor are values longer than this (the matcher's memory is about 400 bytes per byte of value,
   * its 9 forms together): a certificate bundle given as a secret, say. Said the same way.
   */
  redactMaxBytes: 64 * 1024,
  /**
   * The engine's own log files of berth's containers (json-file driver): at most this many files
   * of this size each, the oldest dropped first. What berth harvests is what the engine kept.
   */
  engineLogMaxSize: '16m',
  engineLogMaxFiles: 3,
  /**
   * The manifest's hashing budget: files are hashed, in manifest order, while their sizes add up
   * to at most this many bytes (`--hash-max-bytes`) and this many seconds have not passed
   * (`--hash-max-seconds`); the rest are listed without a hash, and the manifest says so.
   */
  hashMaxBytes: 16 * 1024 * 1024 * 1024,
  hashMaxSeconds: 600,
  /**
   * spec.harvest: what a run's results folder keeps at most, regular files' bytes and entries
   * (files, folders, links, others). Past either cap the harvest keeps what fits in manifest
   * order, removes the rest from the results folder and lists it in the manifest (ResultsTruncated).
   */
  harvestMaxBytes: 1024 * 1024 * 1024,
  /**
   * Disk pressure (the kubelet's nodefs.available<10% and nodefs.inodesFree<5%): below these on
   * the file system of the engine's data root or the results root, new runs wait
   * Pending/DiskPressure (`--disk-pressure-free`, `--disk-pressure-inodes`, BERTH_DISK_PRESSURE_*),
   * looked at again this often while any waits.
   */
  diskPressureFree: '10%',
  diskPressureInodes: '5%',
  diskPressureRecheckMs: 5_000,
  harvestMaxFiles: 100_000,
  /** The manifest lists at most this many of the entries a harvest left out; past it, it counts how many more. */
  manifestLeftOutListed: 1000,
  /** YAML input limits. */
  maxSpecFileBytes: 1024 * 1024,
  maxAliasCount: 100,
  maxNestingDepth: 64,
  /** A git source (`--git`): how often it is fetched (`--git-interval`), and how long one git command may take. */
  gitIntervalMs: 60_000,
  gitTimeoutMs: 120_000,
  /** A failed fetch is tried again after this, doubling up to the interval. */
  gitRetryBaseMs: 2_000,
  /** spec.workspace: bytes written under workspace/files at most, and entries listed at most. */
  workspaceMaxBytes: 256 * 1024 * 1024,
  workspaceMaxFiles: 100_000,
  /** Always left out of the exported workspace, at any depth (picomatch globs matched against a name). */
  workspaceExclude: ['node_modules', '.venv', 'vendor', '__pycache__', '.env', '.env.*'] as readonly string[],
  /** A changed file larger than this (either side) is named in changes.patch like a binary one, not diffed as text. */
  workspaceTextDiffBytes: 1024 * 1024,
  /**
   * A file of the workspace that may be the fixture's unchanged (same size and mode) is read
   * whole and hashed before anything is written when it is at most this large: one the same is
   * then never written under files/ (a larger one is written while hashed, and removed when the same).
   */
  workspaceCompareInMemoryBytes: 1024 * 1024,
  /**
   * The export's small changed files are held in memory (their buffers, at most this much) and
   * written in one synchronous sweep once that much is held, before a large file or a hard link,
   * and at the archive's end (src/workspace/tar.ts).
   */
  workspaceHeldBytes: 32 * 1024 * 1024,
  /** A path deeper than this many components, or longer than this many bytes, is left out (`too-deep`). */
  workspaceMaxDepth: 256,
  workspacePathBytes: 4096,
  /**
   * resources.disk where berth measures (observe/disk-usage.ts): how often the running attempts with a
   * limit are measured (`--disk-interval`; the kubelet's housekeeping is 10 s), what one entry
   * counts at least (one block), and the entries walked per interval over all attempts (those
   * left go first at the next interval).
   */
  diskIntervalMs: 10_000,
  diskEntryMinBytes: 4096,
  diskEntriesPerInterval: 2_000_000,
  /** A writable layer the engine capped counts as full at this share of its cap (plan/exit-outcome.ts). */
  diskFullShare: 0.95,
} as const;

/**
 * `berth exec`, `berth cp` and the API's exec and files (docs/CONTRACT.md, "Exec, copy and
 * sandboxes"; src/touch/): what they record, how an exec is found and killed in its container.
 */
export const EXEC = {
  /** The run folder's record of every exec and copy: a `begin` line before each, an `end` line after (src/touch/record.ts). */
  record: 'execs.jsonl',
  /** The exit code of `berth exec` when its command ran past --timeout and was killed (timeout(1)'s). */
  timedOutExit: 124,
  /** The environment entry every exec berth starts carries (`BERTH_EXEC_ID=<id>`): what berth's helper kills it by. */
  idEnv: 'BERTH_EXEC_ID',
  /** Where berth's helper (native/berth-helper.c) lies in a container: a sandbox's from its creation, any other's from its first kill. */
  helperDir: '/.berth',
  helperPath: '/.berth/berth-helper',
  /** Bytes of an exec's stdout and of its stderr kept in its `end` line (redacted), the rest counted. */
  recordOutputBytes: 4096,
  /** How long the kill of an exec (placing the helper, its exec, the command's end) may take before the exec is given up. */
  killMs: 10_000,
} as const;

/**
 * The HTTP API `berth reconcile` serves (src/api/): its socket in the instance's state folder,
 * its bounds, and the folder of the specs folder where POST /v1/attempts writes a document.
 */
export const API = {
  /** `<state>/<instance>/api.sock`, mode 0600. */
  socket: 'api.sock',
  /** `--api-max-output`: bytes of an exec's stdout and of its stderr an answer carries at most; past it, `truncated`. */
  maxOutputBytes: 1024 * 1024,
  /** The largest JSON body (exec, release, a spec document) read; larger is 413, unread. */
  maxBodyBytes: 16 * 1024 * 1024,
  /** The largest file a PUT of /files takes (its Content-Length; larger is 413, unread). */
  maxFileBytes: 1024 ** 3,
  /** A client that takes none of its answer for this long is cut off (its exec killed, when one runs). */
  idleMs: 60_000,
  /** The specs folder's sub-folder where POST /v1/attempts writes `<name>.yaml` (and DELETE removes it from). */
  specsFolder: 'berth-api',
  /** How long POST /v1/attempts/NAME/release waits for the controller to carry the release out. */
  releaseTimeoutMs: 60_000,
} as const;

/** The files of the exported workspace, in the run folder (docs/CONTRACT.md, "The workspace comes home"). */
export const WORKSPACE = {
  /** The export's folder in the run folder; complete once changes.json is in it. */
  dir: 'workspace',
  changes: 'changes.json',
  patch: 'changes.patch',
  files: 'files',
  /** berth's own record, beside results/, of what was copied in: the export compares with it. */
  base: 'workspace-base.json',
  /** The prefix of the temp folder an export is built in before it is renamed into place. */
  tempPrefix: '.workspace.tmp-',
} as const;

/**
 * A git source (docs/CONTRACT.md "Specs from git"): the URL schemes berth fetches from (git's
 * own GIT_ALLOW_PROTOCOL enforces the list too, also for redirects and submodules), and the
 * layout of `<state>/git`.
 */
export const GIT = {
  schemes: ['https', 'http', 'ssh', 'git', 'file'] as readonly string[],
  /** The bare mirror every fetch goes into. */
  mirror: 'mirror.git',
  /** The ref the source's REF is fetched into. */
  targetRef: 'refs/berth/target',
  /** A revision's specs folder: `rev-<sha>`; `current` is a link to the one in force. */
  revPrefix: 'rev-',
  current: 'current',
  /** What `berth source` shows (source.ts). */
  statusFile: 'source.json',
} as const;

/**
 * Deterministic engine names, one per (instance, attempt, role): no two different combinations
 * map to one name, whatever names users choose. `_` separates the parts: attempt names (DNS-1123
 * labels) never hold one, and the instance's own `_` are doubled, so the instance ends at the
 * first lone `_`; after the attempt, a role word (`sc`, `egress`, `v`) says what follows.
 * Container and network names live apart in the engine, so an attempt's main container and its
 * internal network share one.
 */
export interface Naming {
  container(instance: string, attempt: string): string;
  network(instance: string, attempt: string): string;
  /** A sidecar's container; the egress proxy is the sidecar named `egress-proxy`. */
  sidecar(instance: string, attempt: string, sidecar: string): string;
  /** The per-attempt egress network (the proxy's side that reaches out). */
  egressNetwork(instance: string, attempt: string): string;
  volume(instance: string, attempt: string, volume: string): string;
}

const stem = (instance: string, attempt: string) => `berth_${instance.replace(/_/g, '__')}_${attempt}`;

export const NAMING: Naming = {
  container: stem,
  network: stem,
  sidecar: (i, a, sc) => `${stem(i, a)}_sc_${sc}`,
  egressNetwork: (i, a) => `${stem(i, a)}_egress`,
  volume: (i, a, v) => `${stem(i, a)}_v_${v}`,
};

/**
 * The names berth 0.1 gave (`berth-<instance>-<attempt>[-sc-<sidecar>|-egress|-<volume>]`), which
 * collide (attempt `a`'s sidecar `b` and attempt `a-sc-b`). A run that began under them keeps them
 * until it ends; its resources are recognized by their labels, never by these names alone.
 */
export const LEGACY_NAMING: Naming = {
  container: (i, a) => `berth-${i}-${a}`,
  network: (i, a) => `berth-${i}-${a}`,
  sidecar: (i, a, sc) => `berth-${i}-${a}-sc-${sc}`,
  egressNetwork: (i, a) => `berth-${i}-${a}-egress`,
  volume: (i, a, v) => `berth-${i}-${a}-${v}`,
};

/**
 * A grader's container: grade `k` of run `run` (`<stem>_grade_<run>_<k>`). Outside `Naming`: a
 * run began under berth 0.1's names is graded under these too. After the attempt's name, `_grade_`
 * and two numbers: no sidecar (a DNS label, no `_`) or other role makes it.
 */
export function graderName(instance: string, attempt: string, run: number, k: number): string {
  return `${stem(instance, attempt)}_grade_${run}_${k}`;
}

export const containerName = NAMING.container;
export const networkName = NAMING.network;
export const sidecarName = NAMING.sidecar;
export const volumeName = NAMING.volume;

/**
 * The engine-side lock of an instance, a volume. Every other name berth gives starts `berth_` (or
 * `berth-`, berth 0.1's), so no instance or attempt name can make one of them collide with a lock.
 */
export function lockVolumeName(instance: string): string {
  return `berth.lock.${instance}`;
}
/** The volume that binds an instance to its source (src/status/source-binding.ts). */
export function bindingVolumeName(instance: string): string {
  return `berth.source.${instance}`;
}
/** The claim a taker holds while it replaces the stale lock generation `staleToken`. */
export function lockClaimName(instance: string, staleToken: string): string {
  return `berth.lock-takeover.${instance}.${staleToken}`;
}
