/**
 * berth's command line. Registers the commands and loads each one's modules only when it runs
 * (start-up is part of every command's cost); a command is a plain async function that returns
 * an exit code (tests call them directly). Only this file calls process.exit.
 */
import { Argument, Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { BACKENDS } from '../backend/types';
import type { Engine } from '../engine/types';
import { API, COMPARE, COMPARE_FAIL_ON, DEFAULTS, EXEC, EXIT, FAIL_ON, SIGNAL_EXIT } from '../constants';
import { parseByteSize, parseDisk } from '../spec/quantity';
import { DURATION_SYNTAX, parseDuration } from '../util/duration';
import { parseFloor, type Floor } from '../plan/disk-pressure';
import type * as CleanCmd from './commands/clean';
import type * as Completion from './completion';
import type * as DescribeCmd from './commands/describe';
import type * as EventsCmd from './commands/events';
import type * as GetCmd from './commands/get';
import type * as LogsCmd from './commands/logs';
import type * as BuildLogsCmd from './commands/build-logs';
import type * as PlanCmd from './commands/plan';
import type * as ReconcileCmd from './commands/reconcile';
import type * as SummaryCmd from './commands/summary';
import type * as ImagesCmd from './commands/images';
import type * as ReportCmd from './commands/report';
import type * as CompareCmd from './commands/compare';
import type * as SourceCmd from './commands/source';
import type * as UnlockCmd from './commands/unlock';
import type * as ValidateCmd from './commands/validate';
import type * as WaitCmd from './commands/wait';
import type * as RerunCmd from './commands/rerun';
import type * as VersionCmd from './commands/version';
import type * as RegradeCmd from './commands/regrade';
import type * as DeleteCmd from './commands/delete';
import type * as ResolveCmd from './commands/resolve';
import type * as ChooseCmd from './commands/choose';
import type * as ExecCmd from './commands/exec';
import type * as CpCmd from './commands/cp';
import type * as ReleaseCmd from './commands/release';
import { applyDefaults, CONFIG_FILE, findConfig, loadConfig, type LoadedConfig } from './config';
import type * as ContextMod from './context';
import type { Context, GlobalOptions } from './context';
import { defaultMaxRunning } from './max-running';
import { ENV_HELP, examplesHelp, EXIT_CODES_HELP } from './help';
import { jsonLinesIo, processIo, wantsJsonLogs, writesToFile, type Io } from './io';
import { NAME_FORMS, setNames } from './names';
import { buildOnly, commandWord, flagsOf, type FlagShape } from './only-command';
import { exitWhenDone } from './exit-when-done';
import { seeHelp, usageError, UsageError, UsageOutput } from './usage';

/** Set by the single-file build (scripts/build-cli.ts); from package.json otherwise. */
declare const BERTH_BUNDLED_VERSION: string | undefined;

function version(): string {
  if (typeof BERTH_BUNDLED_VERSION === 'string') return BERTH_BUNDLED_VERSION;
  try {
    return (JSON.parse(readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

function int(name: string, min: number) {
  return (v: string): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) throw new InvalidArgumentError(`${name} must be an integer >= ${min}`);
    return n;
  };
}

/** A percentage, 0 to 100 (a trailing % allowed). */
function percent(name: string) {
  return (v: string): number => {
    const n = Number(v.trim().replace(/%$/, ''));
    if (!Number.isFinite(n) || n < 0 || n > 100) throw new InvalidArgumentError(`${name} must be a percentage from 0 to 100`);
    return n;
  };
}

/** A size in bytes, in the spec's grammar (spec/quantity.ts parseByteSize: 64Ki, 32Mi, 16Gi, 500M, bytes). */
function bytes(name: string, min: number) {
  return (v: string): number => {
    const parsed = parseByteSize(v, min);
    if (!parsed.ok) throw new InvalidArgumentError(`${name} ${parsed.message}`);
    return parsed.bytes;
  };
}

/** A probability strictly between 0 and 1 (`compare --alpha`). */
function probability(name: string) {
  return (v: string): number => {
    const n = Number(v);
    if (!(n > 0 && n < 1)) throw new InvalidArgumentError(`${name} must be a number between 0 and 1, such as 0.05`);
    return n;
  };
}

/** `compare --fail-on`: its own values, and reconcile's (from BERTH_FAIL_ON or berth.yaml, which compare leaves out). */
function compareFailOn(v: string): string {
  if ((COMPARE_FAIL_ON as readonly string[]).includes(v) || (FAIL_ON as readonly string[]).includes(v)) return v;
  throw new InvalidArgumentError(`Allowed choices are ${COMPARE_FAIL_ON.join(', ')}.`);
}

/** A disk pressure threshold (plan/disk-pressure.ts): a percentage, or an amount of bytes or inodes. */
function diskFloor(name: string, unit: 'bytes' | 'inodes') {
  return (v: string): Floor => {
    const f = parseFloor(v, unit);
    if (!f)
      throw new InvalidArgumentError(
        `${name} must be a percentage (10%) or ${unit === 'bytes' ? 'a size (5Gi, 500M, bytes)' : 'a number of inodes'}; 0 turns it off`,
      );
    return f;
  };
}

/** A disk quantity (resources.disk's: the same grammar, at least 1Mi), in bytes. */
function diskQuantity(name: string) {
  return (v: string): number => {
    const parsed = parseDisk(/^[0-9]+$/.test(v.trim()) ? Number(v.trim()) : v.trim());
    if (!parsed.ok) throw new InvalidArgumentError(`${name} ${parsed.message}`);
    return parsed.bytes;
  };
}

/** A duration flag, in milliseconds: `500ms`, `30s`, `2m`, `1h30m`, or a bare number of seconds. */
function durationMs(name: string, o: { zero?: boolean } = {}) {
  return (v: string): number => {
    const ms = parseDuration(v, o);
    if (ms === undefined) throw new InvalidArgumentError(`${name} must be ${o.zero ? 'zero or ' : ''}${DURATION_SYNTAX}`);
    return ms;
  };
}

/** A duration flag whose command takes seconds (fractions allowed: 500ms is 0.5). */
function durationSeconds(name: string, o: { zero?: boolean } = {}) {
  const ms = durationMs(name, o);
  return (v: string): number => ms(v) / 1000;
}

function maxRunningOption(): Option {
  const n = defaultMaxRunning();
  return new Option('--max-running <n>', 'attempts running at once').argParser(int('--max-running', 1)).default(n, `2 × CPUs, at least 2: ${n} here`);
}

/** `--timeout` of rerun, delete, regrade: how long a running controller is given to carry the command out. */
function controllerTimeoutOption(): Option {
  return new Option('--timeout <duration>', 'while a controller runs the instance: how long to wait for it to carry this out (e.g. 30s, 2m)')
    .argParser(durationMs('--timeout'))
    .default(60_000, '60s');
}

/** `--fail-on failed|infra|none` (reconcile --wait, wait): which outcomes make the exit code non-zero. */
function failOnOption(lead: string): Option {
  return new Option(
    '--fail-on <outcomes>',
    `${lead}exit non-zero for: failed (task failures 3, infrastructure outcomes 5), infra (only infrastructure outcomes, 5), none (only berth's own errors)`,
  )
    .choices(FAIL_ON)
    .default('failed');
}

/** `--git URL [--git-ref REF] [--git-path DIR]` (and `--git-interval` for reconcile). */
function gitOptions(cmd: Command, interval: boolean): Command {
  cmd
    .option('--git <url>', 'specs from a git repository (https://, ssh://, git://, file:// or user@host:path; never credentials in it)')
    .option('--git-ref <ref>', "with --git: the branch or tag to follow (default: the remote's default branch)")
    .option('--git-path <dir>', 'with --git: the specs folder inside the repository (default: its root)')
    .option('--git-token-file <file>', 'with an https --git: the token, read from this file at every fetch')
    .option('--git-token-env <var>', 'with an https --git: the token, from this environment variable')
    .option('--git-username <name>', 'with a token: the user name sent with it (default x-access-token)')
    .option('--git-ssh-key <file>', 'with an ssh --git: the private key')
    .option('--git-known-hosts <file>', 'with an ssh --git: the known_hosts file (host keys are always checked)')
    .option('--git-verify <allowed-signers>', 'with --git: apply only commits signed (ssh signing) by a key in this allowed-signers file');
  if (interval) {
    cmd.addOption(
      new Option('--git-interval <duration>', 'with --git, controller: fetch this often (e.g. 30s, 5m)')
        .argParser(durationMs('--git-interval'))
        .default(undefined, `${DEFAULTS.gitIntervalMs / 1000}s`),
    );
  }
  return cmd;
}

/** `get -o`: one of its formats, or kubectl's `jsonpath=TEMPLATE` / `custom-columns=SPEC` (checked when used: jsonpath.ts). */
function getOutput(v: string): string {
  if (['wide', 'json', 'yaml', 'name'].includes(v) || /^(jsonpath|custom-columns)=./s.test(v)) return v;
  throw new InvalidArgumentError(
    `Allowed formats are wide, json, yaml, name, jsonpath=TEMPLATE and custom-columns=SPEC${/^(jsonpath|custom-columns)$/.test(v) ? ` (${v}=...)` : ''}.`,
  );
}

function collect(v: string, prev: string[] = []): string[] {
  return [...prev, v];
}

/** Where buildProgram's defaults come from (tests give their own). */
export interface ProgramEnv {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** The command asks for help: a broken berth.yaml must not keep its help from showing. */
  help?: boolean;
  /** The defaults turned --log-format json on (the Io is made before they are known). */
  jsonLogs?: () => void;
  /** The engine every command uses instead of the one the flags name (tests: the fake engine). */
  engine?: Engine;
  /** The command line about to be parsed: only the command it names is built (only-command.ts); else all of them. */
  argv?: readonly string[];
}

/** berth's global flags (and --version), on the program. */
function globalOptions(program: Command): Command {
  return (
    program
      .version(version())
      // Flags win over the BERTH_* environment variables, which win over berth.yaml, which wins
      // over the defaults (config.ts, applied by the preSubcommand hook below).
      .addOption(new Option('--specs <dir>', 'specs folder').default(DEFAULTS.specsDir))
      .addOption(new Option('--state <dir>', 'state folder (status records, locks)').default(DEFAULTS.stateDir))
      .addOption(new Option('--results-root <dir>', 'results root (default: <state>/results)'))
      .addOption(new Option('--instance <name>', 'reconciler instance: scopes everything berth observes and changes').default(DEFAULTS.instance))
      // Early in the list, so that --help's first screen shows it: a command against an engine that
      // never answers waits this long before it says so.
      .addOption(
        new Option('--engine-timeout <duration>', 'how long one engine call may wait for an answer before berth says the engine does not (e.g. 500ms, 30s, 2m)')
          .argParser(durationMs('--engine-timeout'))
          .default(DEFAULTS.engineTimeoutMs, `${DEFAULTS.engineTimeoutMs / 1000}s`),
      )
      .addOption(new Option('--log-level <level>', 'log level').choices(['error', 'warn', 'info', 'debug']).default('info'))
      .addOption(new Option('--log-format <format>', 'log format: json makes every line on stderr JSON').choices(['text', 'json']).default('text'))
      .addOption(
        new Option('--backend <kind>', 'what runs attempts: one Docker engine, or a Docker Swarm (DOCKER_HOST a manager; docs/SWARM.md)')
          .choices([...BACKENDS])
          .default('engine'),
      )
      .addOption(new Option('--config <file>', `defaults for these flags and others (default: ./${CONFIG_FILE}, else one beside the specs folder)`))
      .addOption(new Option('--context <name>', `the context of ${CONFIG_FILE} to use (default: its current-context)`))
  );
}

/**
 * The global options' flags as globalOptions gives them to the program, for commandOf: a unit test
 * (only-command.test.ts) checks the two agree.
 */
export const GLOBAL_FLAGS: readonly string[] = [
  '-V, --version',
  '--specs <dir>',
  '--state <dir>',
  '--results-root <dir>',
  '--instance <name>',
  '--engine-timeout <duration>',
  '--log-level <level>',
  '--log-format <format>',
  '--backend <kind>',
  '--config <file>',
  '--context <name>',
];
let globalShapes: FlagShape[] | undefined;

/**
 * The command argv names, read as the command line reads it (only-command.ts); undefined when
 * that is not sure. The split build's file of one command runs only what this says is its own.
 * Read from GLOBAL_FLAGS, without building the program's options (the launcher asks it first).
 */
export function commandOf(argv: readonly string[]): string | undefined {
  globalShapes ??= GLOBAL_FLAGS.map(flagsOf);
  return commandWord(argv, globalShapes);
}

export function buildProgram(io: Io, setExit: (code: number) => void, usage = new UsageOutput(), pe: ProgramEnv = {}): Command {
  /** berth.yaml's values, once the hook below has read it. */
  let fileDefaults: ReadonlyMap<string, unknown> | undefined;
  const program = globalOptions(
    new Command('berth').description('A Kubernetes-style reconciler for Docker: declarative eval attempts, converged and attested.'),
  )
    // Subcommand help lists these global flags too (set before the commands, which copy it).
    .configureHelp({ showGlobalOptions: true })
    .exitOverride()
    // Every flag the command line leaves out: BERTH_<FLAG>, then berth.yaml (config.ts).
    .hook('preSubcommand', (root, sub) => {
      if (['version', 'completion', 'help'].includes(sub.name())) return;
      const env = pe.env ?? process.env;
      const cwd = pe.cwd ?? process.cwd();
      applyDefaults(root, env);
      const g = root.opts<{ config?: string; context?: string; specs?: string }>();
      let config: LoadedConfig | undefined;
      fileDefaults = undefined;
      try {
        const file = findConfig({
          ...(g.config !== undefined ? { explicit: g.config } : {}),
          cwd,
          ...(root.getOptionValueSource('specs') !== 'default' ? { specs: g.specs } : {}),
        });
        if (file) config = loadConfig(file, { cwd, ...(g.context !== undefined ? { context: g.context } : {}) });
        else if (g.context !== undefined)
          throw new UsageError(`--context ${g.context}: no ${CONFIG_FILE} here (nor beside the specs folder); --config names one`);
        applyDefaults(root, {}, config);
        applyDefaults(sub, env, config);
        if (config) fileDefaults = new Map([...config.values].map(([k, v]) => [k, v.value]));
      } catch (err) {
        if (!pe.help) throw err;
      }
      if (root.opts<{ logFormat?: string }>().logFormat === 'json') pe.jsonLogs?.();
    })
    .configureOutput({
      writeOut: (s) => io.out(s),
      // Help and the line after a mistake; run() sends it on (help to stdout: usage.ts).
      writeErr: (s) => usage.write(s),
      outputError: (s) => usage.write(usageError(s)),
    });
  const word = pe.argv && commandWord(pe.argv, program.options);
  const finish = word !== undefined ? buildOnly(program, word) : undefined;

  // Without --specs, commands other than reconcile, plan and validate follow the state folder's git source, if any.
  const ctx = (cmd: Command) =>
    (require('./context') as typeof ContextMod).makeContext(
      {
        ...cmd.optsWithGlobals<GlobalOptions>(),
        ...(fileDefaults ? { fileDefaults } : {}),
        followGitSource: !['reconcile', 'plan', 'validate'].includes(cmd.name()) && cmd.getOptionValueSourceWithGlobals('specs') === 'default',
      },
      io,
      pe.engine ? { engine: pe.engine } : {},
    );
  const done = (p: Promise<number>) => p.then(setExit);
  // Names as every command takes them (names.ts): NAME, attempt/NAME, set/NAME. Undefined when
  // one stood for nothing (said on stderr; exit 1): such a command acts on none of them.
  const attemptsOf = async (c: Context, args: string[], o: { harvested?: boolean } = {}): Promise<string[] | undefined> => {
    const resolve = require('./commands/resolve') as typeof ResolveCmd;
    const r = await resolve.resolveAttempts(c, args, o);
    if (resolve.reportMissing(c, r)) {
      setExit(EXIT.failed);
      return undefined;
    }
    return r.names;
  };
  const setsOf = (args: string[]): string[] => {
    const r = setNames(args);
    if (!Array.isArray(r)) throw new UsageError(r.usage);
    return r;
  };

  /** A command's definition runs only when argv names it, or when every command is built (only-command.ts). */
  const define = (name: string, f: () => void): void => {
    if (word === undefined || word === name) f();
  };

  define('validate', () => {
    const validate = program
      .command('validate')
      .description('check specs; no engine needed')
      .argument('[path...]', 'spec files or folders (default: --specs)')
      .addOption(new Option('-o, --output <format>', 'output format').choices(['text', 'json']).default('text'))
      .option('-v, --verbose', 'also say which files were found but not read as specs, and why (.berthignore, inside a fixture or fromDir)');
    gitOptions(validate, false).action(async (paths: string[], o: { output: 'text' | 'json'; verbose?: boolean; git?: string }, cmd: Command) => {
      const c = ctx(cmd);
      const v = require('./commands/validate') as typeof ValidateCmd;
      // A path given on the command line is checked as it is, whatever git source the defaults name.
      const fromCli = (k: string) => !paths.length || cmd.getOptionValueSource(k) === 'cli';
      if (Object.keys(o).some((k) => k.startsWith('git') && fromCli(k))) {
        if (paths.length) throw new UsageError('--git validates the repository: give no paths');
        await done(v.runValidateGit(c, o));
        return;
      }
      const cacheIn = v.validateCacheIn(c.env);
      await done(
        v.runValidate(
          paths.length ? paths : [c.specsDir],
          {
            output: o.output,
            resultsRoot: c.resultsRoot,
            resultsRootIsDefault:
              cmd.getOptionValueSourceWithGlobals('resultsRoot') === undefined && cmd.getOptionValueSourceWithGlobals('state') === 'default',
            env: c.env,
            ...(o.verbose ? { verbose: true } : {}),
            ...(cacheIn !== undefined ? { cacheIn } : {}),
          },
          io,
        ),
      );
    });
  });

  define('plan', () => {
    const plan = program
      .command('plan')
      .description('what reconcile would do, and why, changing nothing')
      .addOption(new Option('-o, --output <format>', 'output format').choices(['text', 'json']).default('text'))
      .option('--detailed-exitcode', `exit ${EXIT.changesPending} when changes are pending, 0 when converged`)
      .addOption(maxRunningOption())
      .option('--egress-proxy-image <image>', 'image of the egress proxy sidecar (same contract as docs/EGRESS.md)')
      .option('--egress-network <name>', 'existing network the egress proxy reaches out through (default: one per attempt)')
      .option('--allow-empty', "let a specs folder with no attempts remove the instance's attempts (default: such a folder removes nothing)")
      .option('--infra-retries <n>', `as for reconcile (default ${DEFAULTS.infraRetries})`, int('--infra-retries', 0))
      .option('--move-instance', 'the instance is bound to another source: plan as if it were moved to this one (reconcile --move-instance)');
    gitOptions(plan, false).action(async (o, cmd: Command) => {
      await done((require('./commands/plan') as typeof PlanCmd).runPlan(ctx(cmd), o));
    });
  });

  define('reconcile', () => {
    const reconcile = program
      .command('reconcile')
      .description('converge the engine to the specs')
      .option('--once', 'make one full pass and exit')
      .option('--wait', 'with --once: keep going until every attempt is finished')
      .option('--timeout <duration>', 'with --once --wait: give up after this long (e.g. 30m, 1h; a bare number is seconds)', durationSeconds('--timeout'))
      .addOption(failOnOption('with --wait: '))
      .addOption(maxRunningOption())
      .option('--concurrency <n>', `engine operations in flight (default: ${DEFAULTS.concurrency})`, int('--concurrency', 1))
      .addOption(new Option('--resync <duration>', 'controller: full pass at least this often').argParser(durationSeconds('--resync')).default(30, '30s'))
      .addOption(
        new Option('--settle <duration>', 'controller: a spec file is read once it has had no write this long (longer for slow writers, network file systems)')
          .argParser(durationSeconds('--settle'))
          .default(0.06, '60ms'),
      )
      .option('--egress-proxy-image <image>', 'image of the egress proxy sidecar (same contract as docs/EGRESS.md)')
      .option('--egress-network <name>', 'existing network the egress proxy reaches out through (default: one per attempt)')
      .option('--workers <n>', 'controller: attempts worked on at once (default: --concurrency)', int('--workers', 1))
      .option('--metrics-addr <host:port>', 'controller: serve Prometheus metrics, /healthz and /readyz (e.g. 127.0.0.1:9464)')
      .option('--webhook-addr <host:port>', 'controller with --git: a POST with a valid X-Hub-Signature-256 triggers a fetch at once')
      .option('--webhook-secret-file <file>', "the webhook's HMAC secret, from this file")
      .option('--webhook-secret-env <var>', "the webhook's HMAC secret, from this environment variable")
      .option('--notify-url <url>', "with --git: POST each revision's outcome here (JSON, X-Berth-Signature-256) once all its attempts finished")
      .option('--notify-secret-file <file>', 'the HMAC secret --notify-url POSTs are signed with, from this file')
      .option('--notify-secret-env <var>', 'the HMAC secret --notify-url POSTs are signed with, from this environment variable')
      .addOption(
        new Option('--retry-backoff <duration>', 'first back-off before retrying a failed run (doubles, capped at 6 min; 0: none)')
          .argParser(durationSeconds('--retry-backoff', { zero: true }))
          .default(10, '10s'),
      )
      .option('--allow-empty', "let a specs folder with no attempts remove the instance's attempts (default: such a folder removes nothing)")
      .option(
        '--allow-weak-isolation',
        'run attempts on an engine that would not isolate them (no seccomp, an unknown default runtime; berth version shows what it has)',
      )
      .option(
        '--infra-retries <n>',
        `re-runs of an attempt after infrastructure deaths (EngineRestarted, StartFailed), apart from its spec's retries (default ${DEFAULTS.infraRetries})`,
        int('--infra-retries', 0),
      )
      .option(
        '--log-max-bytes <size>',
        `bytes of each container's log kept in its run folder: the first and last half, the middle cut with a marker line (a size such as 64Ki or 32Mi; default ${DEFAULTS.logMaxBytes / 1024 / 1024}Mi)`,
        bytes('--log-max-bytes', 1024),
      )
      .option(
        '--hash-max-bytes <size>',
        `bytes of results the manifest hashes at most; larger files are listed without a hash (default ${DEFAULTS.hashMaxBytes / 1024 ** 3}Gi)`,
        bytes('--hash-max-bytes', 0),
      )
      .option(
        '--hash-max-seconds <duration>',
        `how long the manifest hashes at most per run (e.g. 90s, 5m; a bare number is seconds; default ${DEFAULTS.hashMaxSeconds}s)`,
        durationSeconds('--hash-max-seconds'),
      )
      .addOption(
        new Option(
          '--fixture-cache-size <size>',
          `bytes of packed fixture layers kept in the state folder (cache/fixtures), least recently used removed first; 0: none kept (default ${DEFAULTS.fixtureCacheBytes / 1024 ** 3}Gi)`,
        )
          .argParser(bytes('--fixture-cache-size', 0))
          .env('BERTH_FIXTURE_CACHE_SIZE'),
      )
      .option('--move-instance', 'the instance is bound to another source: move it to this one on purpose (what the other source runs is removed)')
      .option('--max-pulls <n>', `image pulls under way at once (default ${DEFAULTS.maxPulls})`, int('--max-pulls', 1))
      .option(
        '--prefetch <n>',
        'attempts beyond the free slots whose images are pulled ahead, in admission order (default: --max-running; 0: none)',
        int('--prefetch', 0),
      )
      .option(
        '--pull-retries <n>',
        `with --once: failed pulls of an image (a rate limit's waits not counted) after which its attempts settle Blocked (default ${DEFAULTS.pullRetries})`,
        int('--pull-retries', 1),
      )
      .option('--registry-config <file>', 'registry credentials, a docker config.json (default: $DOCKER_CONFIG/config.json, else ~/.docker/config.json)')
      .addOption(
        new Option(
          '--default-deadline <duration>',
          'deadline of attempts whose spec sets no deadlineSeconds (e.g. 30m, 2h; a bare number is seconds); not part of the spec hash (default: none)',
        ).argParser(durationMs('--default-deadline')),
      )
      .addOption(
        new Option(
          '--disk-pressure-free <floor>',
          `new runs wait (Pending/DiskPressure) while the file system of the engine's data root or of the results root has less space free: a percentage or a size (e.g. 10%, 5Gi; 0: off; default ${DEFAULTS.diskPressureFree})`,
        ).argParser(diskFloor('--disk-pressure-free', 'bytes')),
      )
      .addOption(
        new Option(
          '--disk-pressure-inodes <floor>',
          `as --disk-pressure-free, for free inodes: a percentage or a number (e.g. 5%, 100000; 0: off; default ${DEFAULTS.diskPressureInodes})`,
        ).argParser(diskFloor('--disk-pressure-inodes', 'inodes')),
      )
      .addOption(
        new Option(
          '--default-disk <quantity>',
          'disk limit of attempts whose spec sets no resources.disk (writable layer, results and volumes together; e.g. 2Gi, 500M); not part of the spec hash (default: none)',
        ).argParser(diskQuantity('--default-disk')),
      )
      .option(
        '--api-addr <host:port>',
        `the API (exec, files, release, create, delete) on TCP too, with --api-token-file's bearer token; always on <state>/<instance>/${API.socket}`,
      )
      .option('--api-token-file <file>', 'the bearer token every API request on --api-addr must carry, from this file')
      .option(
        '--api-max-output <size>',
        `bytes of an exec's stdout and of its stderr an API answer carries; past it, cut and truncated: true (default ${API.maxOutputBytes / 1024 / 1024}Mi)`,
        bytes('--api-max-output', 1024),
      )
      .addOption(
        new Option('--disk-interval <duration>', 'controller: how often the running attempts with a disk limit are measured (e.g. 10s, 1m)')
          .argParser(durationMs('--disk-interval'))
          .default(DEFAULTS.diskIntervalMs, `${DEFAULTS.diskIntervalMs / 1000}s`),
      )
      .addOption(
        new Option('--max-builds <n>', 'images built from a Dockerfile at once (spec.build)').argParser(int('--max-builds', 1)).default(DEFAULTS.maxBuilds),
      )
      .addOption(
        new Option('--build-timeout <duration>', 'a build still going after this is stopped (BuildFailed; e.g. 10m, 1h)')
          .argParser(durationMs('--build-timeout'))
          .default(DEFAULTS.buildTimeoutMs, `${DEFAULTS.buildTimeoutMs / 60_000}m`),
      )
      .addOption(
        new Option(
          '--image-gc-high <percent>',
          "image GC: when the engine's data root's file system is fuller than this, images berth pulled or built that no unfinished attempt needs are removed, least recently used first",
        )
          .argParser(percent('--image-gc-high'))
          .default(DEFAULTS.imageGcHighPercent),
      )
      .addOption(
        new Option('--image-gc-low <percent>', 'image GC: removes until the file system is at most this full')
          .argParser(percent('--image-gc-low'))
          .default(DEFAULTS.imageGcLowPercent),
      )
      .addOption(
        new Option('--image-gc-min-age <duration>', 'image GC: an image used (pulled, built, run) more recently than this is kept')
          .argParser(durationMs('--image-gc-min-age', { zero: true }))
          .default(DEFAULTS.imageGcMinAgeMs, `${DEFAULTS.imageGcMinAgeMs / 60_000}m`),
      );
    gitOptions(reconcile, true).action(async (o, cmd: Command) => {
      if (o.wait && !o.once) throw new UsageError('--wait goes with --once (reconcile --once --wait); to wait on a running controller, use berth wait');
      // From BERTH_TIMEOUT or berth.yaml, --timeout is for the --once --wait runs only.
      if (o.timeout !== undefined && !o.wait && cmd.getOptionValueSource('timeout') !== 'cli') delete o.timeout;
      if (o.timeout !== undefined && !o.wait)
        throw new UsageError(
          `--timeout goes with --once --wait (berth reconcile --once --wait --timeout 30m): ${o.once ? 'without --wait, --once does not wait' : 'a controller runs until it is stopped'}`,
        );
      await done((require('./commands/reconcile') as typeof ReconcileCmd).runReconcile(ctx(cmd), o));
    });
  });

  define('get', () => {
    program
      .command('get')
      .description('list attempts and their status')
      .argument('[name...]', `attempts to show (default: all): ${NAME_FORMS}`)
      .option(
        '-l, --selector <selector>',
        "label selector, as kubectl's: k=v, k!=v, 'k in (a,b)', 'k notin (a,b)', k, !k; comma = and (repeatable: and)",
        collect,
      )
      .addOption(
        new Option(
          '-o, --output <format>',
          "wide, json, yaml, name, jsonpath=TEMPLATE ('{.items[*].metadata.name}') or custom-columns=NAME:.path,...",
        ).argParser(getOutput),
      )
      .option('--sort-by <path>', "sort by the value of this JSONPath in each attempt (e.g. '.status.startedAt', '.metadata.name')")
      .option('--no-headers', 'tables without the header row')
      .option('--sets', 'list AttemptSets: a row per set with its children counted by phase')
      .option('-w, --watch', 'after the listing, print each change as it happens (until Ctrl-C)')
      .option('--limit <n>', "at most n attempts; the next page is given by --continue (the list's .metadata.continue)", int('--limit', 1))
      .option('--continue <token>', 'the page after the one that gave this token (with the same --sort-by)')
      .action(async (args: string[], o, cmd: Command) => {
        const c = ctx(cmd);
        const get = require('./commands/get') as typeof GetCmd;
        if (o.sets) return done(get.runGet(c, setsOf(args), o));
        // kubectl: what was found is shown, and each name that was not is an error (exit 1).
        const resolve = require('./commands/resolve') as typeof ResolveCmd;
        const r = await resolve.resolveAttempts(c, args);
        const missing = resolve.reportMissing(c, r);
        if (missing && !r.names.length) return setExit(EXIT.failed);
        const code = await get.runGet(c, r.names, o);
        return setExit(missing && code === EXIT.ok ? EXIT.failed : code);
      });
  });

  define('events', () => {
    program
      .command('events')
      .description('what happened to attempts (created, started, attested, drifted, died, retried, removed), newest last')
      .argument('[name...]', `whose events (default: every attempt's): ${NAME_FORMS}`)
      .option('-l, --selector <selector>', 'label selector, as for get', collect)
      .option('-w, --watch', 'print new events as they happen (until Ctrl-C)')
      .addOption(new Option('-o, --output <format>', 'output format (json: one event per line)').choices(['json']))
      .action(async (args: string[], o: EventsCmd.EventsOptions & { selector?: string[] }, cmd: Command) => {
        const c = ctx(cmd);
        let names: string[] | undefined;
        if (args.length || o.selector?.length) {
          const given = await attemptsOf(c, args);
          if (!given) return;
          const chosen = await (require('./commands/choose') as typeof ChooseCmd).chooseAttempts(c, 'events', given, o.selector);
          if (typeof chosen === 'number') return setExit(chosen);
          names = chosen.map((r) => r.name);
        }
        return done((require('./commands/events') as typeof EventsCmd).runEvents(c, names, o));
      });
  });

  define('wait', () => {
    program
      .command('wait')
      .description('wait until attempts are finished, or in a phase')
      .argument('[name...]', `attempts to wait for (default: all, or those -l selects): ${NAME_FORMS}`)
      .option('-l, --selector <selector>', 'label selector, as for get', collect)
      .option('--for <condition>', 'finished, or phase=<Phase> (e.g. phase=Succeeded)', 'finished')
      .addOption(
        new Option('--timeout <duration>', 'give up after this long, exit 1 (e.g. 30m, 1h; a bare number is seconds)')
          .argParser(durationMs('--timeout'))
          .default(30_000, '30s'),
      )
      .addOption(failOnOption(''))
      .action(async (args: string[], o, cmd: Command) => {
        const c = ctx(cmd);
        const names = await attemptsOf(c, args);
        if (names) await done((require('./commands/wait') as typeof WaitCmd).runWait(c, names, o));
      });
  });

  define('rerun', () => {
    program
      .command('rerun')
      .description('a new run of finished attempts, same spec (earlier results stay)')
      .argument('[name...]', `attempts to re-run: ${NAME_FORMS}`)
      .option('-l, --selector <selector>', 'label selector, as for get', collect)
      .option('--all', 'every finished attempt (the others are left as they are)')
      .addOption(controllerTimeoutOption())
      .action(async (args: string[], o, cmd: Command) => {
        const c = ctx(cmd);
        const names = await attemptsOf(c, args);
        if (names) await done((require('./commands/rerun') as typeof RerunCmd).runRerun(c, names, o));
      });
  });

  define('regrade', () => {
    program
      .command('regrade')
      .description('grade finished runs again (spec.grade), without running their attempts again; earlier grades stay')
      .argument('[name...]', `attempts to grade again: ${NAME_FORMS}`)
      .option('-l, --selector <selector>', 'label selector, as for get', collect)
      .option('--all', 'every attempt with a grader')
      .option('--no-wait', 'mark and begin the grades the slots allow, without seeing them through')
      .addOption(maxRunningOption())
      .addOption(controllerTimeoutOption())
      .action(async (args: string[], o, cmd: Command) => {
        const c = ctx(cmd);
        const names = await attemptsOf(c, args);
        if (names) await done((require('./commands/regrade') as typeof RegradeCmd).runRegrade(c, names, o));
      });
  });

  define('delete', () => {
    program
      .command('delete')
      .description("remove attempts' engine resources now (results stay); not run again until the spec changes or rerun")
      .argument('[name...]', `attempts to delete: ${NAME_FORMS}`)
      .option('-l, --selector <selector>', 'label selector, as for get', collect)
      .option('--all', 'every attempt of the instance with a valid spec not deleted yet')
      .addOption(controllerTimeoutOption())
      .action(async (args: string[], o, cmd: Command) => {
        const c = ctx(cmd);
        const names = await attemptsOf(c, args);
        if (names) await done((require('./commands/delete') as typeof DeleteCmd).runDelete(c, names, o));
      });
  });

  define('images', () => {
    program
      .command('images')
      .description('the images the specs need: present, missing, pulling (bytes) or in back-off (why), size, attempts, whether berth pulled them')
      .argument('[name...]', `attempts whose images to show: ${NAME_FORMS} (default: all)`)
      .option('-l, --selector <selector>', 'label selector, as for get', collect)
      .addOption(new Option('-o, --output <format>', 'output format').choices(['wide', 'json']))
      .action(async (args: string[], o, cmd: Command) => {
        const c = ctx(cmd);
        const names = args.length ? await attemptsOf(c, args) : [];
        if (names) await done((require('./commands/images') as typeof ImagesCmd).runImages(c, names, o));
      });
  });

  define('pull', () => {
    program
      .command('pull')
      .description('pull now the images those attempts need (CI warm-up), with progress; exit 0 when all are present')
      .argument('[name...]', `attempts whose images to pull: ${NAME_FORMS}`)
      .option('-l, --selector <selector>', 'label selector, as for get', collect)
      .option('--all', 'the images of every attempt')
      .option('--max-pulls <n>', `pulls under way at once (default ${DEFAULTS.maxPulls})`, int('--max-pulls', 1))
      .option('--registry-config <file>', 'registry credentials, a docker config.json (default: $DOCKER_CONFIG/config.json, else ~/.docker/config.json)')
      .action(async (args: string[], o, cmd: Command) => {
        const c = ctx(cmd);
        const names = args.length ? await attemptsOf(c, args) : [];
        if (names) await done((require('./commands/images') as typeof ImagesCmd).runPull(c, names, o));
      });
  });

  define('exec', () => {
    program
      .command('exec')
      .description("run a command in a running attempt's main container, as its user; exits with its exit code (recorded: the run is touched)")
      .argument('<name>', 'the attempt (NAME or attempt/NAME)')
      .argument('[cmd...]', 'after --: the command and its arguments')
      .option('--timeout <duration>', `kill the command in the container after this long and exit ${EXEC.timedOutExit} (e.g. 30s, 5m)`, durationMs('--timeout'))
      .option('-w, --workdir <dir>', "the working folder in the container (default: the attempt's workingDir)")
      .option('-i, --interactive', 'pass standard input to the command')
      .option('-t, --tty', 'give the command a terminal')
      .action(async (name: string, command: string[], o: ExecCmd.ExecOptions, cmd: Command) => {
        await done((require('./commands/exec') as typeof ExecCmd).runExec(ctx(cmd), name, command, o));
      });
  });

  define('cp', () => {
    program
      .command('cp')
      .description("copy into or out of a running attempt's main container, as docker cp does (recorded: the run is touched)")
      .argument('<src>', 'NAME:PATH in the attempt, or a host path (- : a tar on standard input)')
      .argument('<dest>', 'NAME:PATH in the attempt, or a host path (- : a tar on standard output)')
      .action(async (src: string, dest: string, _o: unknown, cmd: Command) => {
        await done((require('./commands/cp') as typeof CpCmd).runCp(ctx(cmd), src, dest));
      });
  });

  define('release', () => {
    program
      .command('release')
      .description('end a running sandbox (spec.sandbox) with an exit code, as its process ending would; then harvest, export and grade as any run')
      .argument('<name>', 'the sandbox (NAME or attempt/NAME)')
      .option('--exit-code <n>', 'the exit code its run ends with (0: Succeeded; else Failed)', int('--exit-code', 0), 0)
      .addOption(controllerTimeoutOption())
      .action(async (name: string, o: { exitCode: number; timeout?: number }, cmd: Command) => {
        if (o.exitCode > 255) throw new UsageError('--exit-code must be an integer from 0 to 255');
        await done((require('./commands/release') as typeof ReleaseCmd).runRelease(ctx(cmd), name, o));
      });
  });

  define('summary', () => {
    program
      .command('summary')
      .description('how AttemptSets did: counts, pass@k, pass rates per axis value, durations')
      .argument('[set...]', 'AttemptSets, NAME or set/NAME (default: all)')
      .option('-l, --selector <key=value>', 'only children with these spec labels (repeatable, or comma-separated)', collect)
      .option('--samples <axis>', 'the axis whose values are repeated samples of one cell (default: seed, sample, trial, attempt, try or run)')
      .addOption(
        new Option('-o, --output <format>', 'output format (markdown: for $GITHUB_STEP_SUMMARY)')
          .choices(['table', 'json', 'junit', 'markdown'])
          .default('table'),
      )
      .action(async (sets: string[], o, cmd: Command) => {
        await done((require('./commands/summary') as typeof SummaryCmd).runSummary(ctx(cmd), setsOf(sets), o));
      });
  });

  define('compare', () => {
    program
      .command('compare')
      .description('did a change make the agent better, and is the difference real: paired pass rates, a 95% interval, an exact McNemar p-value, regressions')
      .argument('[set...]', 'AttemptSets, NAME or set/NAME (default: every set with the axis, or every set now or in the baseline)')
      .option('--by <axis=a,b>', 'compare values of an axis within each set, children paired on the other axes (a,b,c: b and c each against a)')
      .option('--baseline <file>', 'compare with an earlier summary (berth summary -o json), children paired by name')
      .option('--samples <axis>', 'the axis whose values are repeated samples of one cell, as for summary (the interval resamples cells)')
      .addOption(
        new Option('-o, --output <format>', 'output format (markdown: for $GITHUB_STEP_SUMMARY or a pull-request comment)')
          .choices(['text', 'json', 'markdown'])
          .default('text'),
      )
      .addOption(
        new Option(
          '--fail-on <what>',
          `regression: exit ${EXIT.regression} when a pass rate fell with p < --alpha (never for a drop that could be noise); none: exit 0`,
        )
          .choices(COMPARE_FAIL_ON)
          // BERTH_FAIL_ON and berth.yaml's fail-on are reconcile's and wait's (failed, infra, none):
          // parsed here too, so that they do not break compare, and left out by its action below
          .argParser(compareFailOn)
          .default('none'),
      )
      .addOption(new Option('--alpha <p>', 'the significance level of --fail-on regression').argParser(probability('--alpha')).default(COMPARE.alpha))
      .action(async (sets: string[], o, cmd: Command) => {
        if (!(COMPARE_FAIL_ON as readonly string[]).includes(o.failOn)) {
          if (cmd.getOptionValueSource('failOn') === 'cli') throw new UsageError(`--fail-on ${o.failOn}: compare takes ${COMPARE_FAIL_ON.join(' or ')}`);
          o.failOn = 'none';
        }
        await done((require('./commands/compare') as typeof CompareCmd).runCompare(ctx(cmd), setsOf(sets), o));
      });
  });

  define('report', () => {
    program
      .command('report')
      .description('the fleet report: one self-contained HTML file (summary, matrix heatmap, timeline, attempts)')
      .argument('[set...]', 'AttemptSets, NAME or set/NAME (default: every set and plain attempt)')
      .option('-l, --selector <key=value>', 'only attempts with these spec labels (repeatable, or comma-separated)', collect)
      .option('-o, --output <file.html>', 'where to write it; - for stdout (default: <results root>/report.html, where its links work)')
      .option('--max-running <n>', "the slots line drawn on the timeline (default: reconcile's default here)", int('--max-running', 1))
      .option('--baseline <file>', 'an earlier summary (berth summary -o json): the report shows the sets compared with it first (as berth compare --baseline)')
      .action(async (sets: string[], o, cmd: Command) => {
        await done((require('./commands/report') as typeof ReportCmd).runReport(ctx(cmd), setsOf(sets), o));
      });
  });

  define('describe', () => {
    program
      .command('describe')
      .description('everything about attempts')
      .argument('[name...]', NAME_FORMS)
      .option('-l, --selector <selector>', 'label selector, as for get', collect)
      .option('--all', 'every attempt')
      .action(async (args: string[], o: { selector?: string[]; all?: boolean }, cmd: Command) => {
        const c = ctx(cmd);
        const given = await attemptsOf(c, args);
        if (!given) return;
        const chosen = await (require('./commands/choose') as typeof ChooseCmd).chooseAttempts(c, 'describe', given, o.selector, o.all === true);
        if (typeof chosen === 'number') return setExit(chosen);
        // in the order given (a set's children in expansion order), else by name
        const names = given.length ? given : chosen.map((r) => r.name);
        const describe = require('./commands/describe') as typeof DescribeCmd;
        let code: number = EXIT.ok;
        // Several (a set): one after another, a blank line between, as kubectl describes several objects.
        for (const [i, name] of names.entries()) {
          if (i) io.out('\n');
          const one = await describe.runDescribe(c, name);
          if (one !== EXIT.ok) code = one;
        }
        setExit(code);
      });
  });

  define('source', () => {
    program
      .command('source')
      .description('the git source (--git): URL, ref, revision in force, fetched and applied, its spec errors, stale or not')
      .addOption(new Option('-o, --output <format>', 'output format').choices(['json']))
      .action(async (o: { output?: 'json' }, cmd: Command) => {
        await done((require('./commands/source') as typeof SourceCmd).runSource(ctx(cmd), o));
      });
  });

  define('logs', () => {
    program
      .command('logs')
      .description("attempts' logs: from their containers, or harvested after they are gone")
      .argument('[name...]', NAME_FORMS)
      .option('-l, --selector <selector>', 'label selector, as for get', collect)
      .option('--all', "every attempt's log, each after a ==> attempt/NAME <== line")
      .option('-f, --follow', 'follow the log')
      .option('--run <n>', 'that run (default: the current one); earlier runs from their harvested logs', int('--run', 1))
      .option('--sidecar <name>', "a sidecar's log (e.g. egress-proxy)")
      .option('--grade [k]', "the grader's log of the run's grade k (default: its latest; spec.grade)", int('--grade', 1))
      .option('--tail <n>', 'only the last n lines', int('--tail', 0))
      .option('--build', "the log of the build of the attempt's image from its Dockerfile (spec.build), and its grader's")
      .action(async (args: string[], o: LogsCmd.LogsOptions & { selector?: string[]; all?: boolean; build?: boolean }, cmd: Command) => {
        const c = ctx(cmd);
        if (o.build) {
          if (!args.length) throw new UsageError('logs --build NAME...: name the attempts');
          return done((require('./commands/build-logs') as typeof BuildLogsCmd).runBuildLogs(c, args, o));
        }
        // an attempt whose spec (and record) is gone still has its harvested logs
        const names = await attemptsOf(c, args, { harvested: true });
        if (!names) return;
        if (names.length && o.all) throw new UsageError('logs: --all takes no names and no -l');
        if (names.length && o.selector?.length) throw new UsageError('logs: give names or -l, not both');
        const chosen = names.length
          ? []
          : await (require('./commands/choose') as typeof ChooseCmd).chooseAttempts(c, 'logs', names, o.selector, o.all === true);
        if (typeof chosen === 'number') return setExit(chosen);
        // in the order given (a set's children in expansion order), not chooseAttempts' sorted one
        const order = names.length ? names : chosen.map((r) => r.name);
        return done((require('./commands/logs') as typeof LogsCmd).runLogsOf(c, order, o));
      });
  });

  define('clean', () => {
    program
      .command('clean')
      .description('remove every resource of this instance (results stay)')
      .option('--keep-state', 'keep the status records')
      .option('--move-instance', 'the instance is bound to another source (another specs folder or git URL): clean it anyway')
      .action(async (o, cmd: Command) => {
        const specsGiven = cmd.getOptionValueSourceWithGlobals('specs') !== 'default';
        await done((require('./commands/clean') as typeof CleanCmd).runClean(ctx(cmd), { ...o, specsGiven }));
      });
  });

  define('unlock', () => {
    program
      .command('unlock')
      .description("remove the instance's locks (on the engine and in the state folder) left by a berth process that is gone")
      .option('--force', 'also when its holder runs on another host or still runs')
      .action(async (o, cmd: Command) => {
        await done((require('./commands/unlock') as typeof UnlockCmd).runUnlock(ctx(cmd), o));
      });
  });

  define('version', () => {
    program
      .command('version')
      .description("berth's version and the engine's")
      .addOption(new Option('-o, --output <format>', 'json: {version, node, contract, engine}').choices(['json']))
      .action(async (o: { output?: 'json' }, cmd: Command) => {
        await done((require('./commands/version') as typeof VersionCmd).runVersion(ctx(cmd), version(), o));
      });
  });

  define('completion', () => {
    program
      .command('completion')
      .description('a shell completion script: bash, zsh or fish')
      .addArgument(new Argument('<shell>').choices(['bash', 'zsh', 'fish']))
      .action((shell: 'bash' | 'zsh' | 'fish') => {
        const c = require('./completion') as typeof Completion;
        const spec = c.completionSpec(program);
        io.out(shell === 'bash' ? c.bashCompletion(spec) : shell === 'zsh' ? c.zshCompletion(spec) : c.fishCompletion(spec));
      });
  });

  // argv's word named no command: all of them, as without argv
  if (finish && !finish()) {
    const { argv: _argv, ...all } = pe;
    return buildProgram(io, setExit, usage, all);
  }
  for (const c of program.commands) {
    c.addHelpText('after', examplesHelp(c.name()));
    // A mistake prints two lines, as kubectl's do: what is wrong (with a did-you-mean), and where help is.
    c.showHelpAfterError(seeHelp(c.name()));
  }
  program.showHelpAfterError(seeHelp());
  program.addHelpText('after', `${examplesHelp('berth')}${EXIT_CODES_HELP}${ENV_HELP}`);
  return program;
}

/** Runs berth with the given argv; resolves to the exit code. Never exits the process. */
export async function run(argv: string[], plainIo: Io = processIo, pe: Omit<ProgramEnv, 'jsonLogs' | 'help'> = {}): Promise<number> {
  let current = wantsJsonLogs(argv, pe.env) ? jsonLinesIo(plainIo) : plainIo;
  // berth.yaml may turn json logs on: known only once the command is parsed.
  const io: Io = {
    out: (s) => current.out(s),
    err: (s) => current.err(s),
    isTTY: plainIo.isTTY,
  };
  const jsonLogs = () => {
    if (current === plainIo) current = jsonLinesIo(plainIo);
  };
  let code: number = EXIT.ok;
  const usage = new UsageOutput();
  const help = argv.slice(2).some((a) => a === '--help' || a === '-h');
  const program = buildProgram(io, (c) => (code = c), usage, { ...pe, help, jsonLogs, ...(help ? {} : { argv }) });
  try {
    await program.parseAsync(argv);
    return code;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help') {
        // `berth` with no command: its help, on stdout as every help is.
        io.out(usage.take());
        return EXIT.ok;
      }
      io.err(usage.take());
      return EXIT.usage;
    }
    if (err instanceof UsageError) {
      io.err(`berth: ${err.message}\n`);
      return EXIT.usage;
    }
    // The specs root vanished between a command's check and its load: still nothing was planned.
    if ((err as { code?: unknown } | null)?.code === 'SpecsRootUnreadable') {
      io.err(`berth: ${(err as Error).message}\n`);
      return EXIT.usage;
    }
    io.err(`berth: ${err instanceof Error ? err.message : String(err)}\n`);
    if (process.env.BERTH_DEBUG && err instanceof Error) io.err(`${err.stack}\n`);
    return EXIT.failed;
  }
}

/**
 * SIGINT and SIGTERM for every command: a command that stops gracefully listens itself (the
 * controller, `reconcile --once`: interrupt.ts); for the others, and for a second signal, berth
 * exits at once with the shell's 128 + signal. Listening matters where berth is PID 1 (the
 * berth/berth:local image, `docker stop`): the kernel delivers no signal to a PID 1 that does
 * not handle it, so without this berth would ignore both until it is killed.
 */
function exitOnSignals(): void {
  for (const [signal, code] of Object.entries(SIGNAL_EXIT) as ['SIGINT' | 'SIGTERM', number][]) {
    process.on(signal, () => {
      if (process.listenerCount(signal) > 1) return; // the command's own handler stops it
      process.exit(code);
    });
  }
}

export function main(argv: string[]): void {
  exitOnSignals();
  // A reader that went away (`berth get | head`) ends the command quietly, as it ends `ls`, not
  // with an unhandled EPIPE and a stack trace.
  // (A file or /dev/null is written without Node's stream, io.ts: no reader to go away.)
  if (!writesToFile(1))
    process.stdout.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE') throw err;
      process.exit(process.exitCode ?? EXIT.ok);
    });
  run(argv).then(
    (code) => {
      process.exitCode = code;
      // ended at once when nothing is left to do (exit-when-done.ts: ~1 ms of a short command)
      exitWhenDone(code);
    },
    (err: unknown) => {
      process.stderr.write(`berth: ${String(err)}\n`);
      process.exitCode = EXIT.failed;
    },
  );
}
