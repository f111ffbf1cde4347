/**
 * `berth validate [PATH...] [-o json]`: loads the given spec files and folders (default: specs/)
 * without an engine and reports every error. Returns the exit code: 0 when all is valid, 2 when
 * anything is invalid. Text: errors compiler-style on stderr, one summary line on stdout.
 * JSON (`-o json`, stable for scripts): `{valid, files, attempts, sets, errors}` on stdout
 * (`sets`: each AttemptSet's name, whether it is valid as a whole, and its children's names).
 * `-v`: also the files found but not read as specs (`.berthignore`, inside a fixture or a
 * `fromDir`), each with why (`skipped` in JSON).
 * Warnings (stderr in text, `warnings` in JSON; never an error): a secret whose value, as this
 * process can read it, is too short or too long to be redacted from what berth writes
 * (harvest/redaction.ts).
 */
import { closeSync, constants as fsConstants, fstatSync, mkdirSync, openSync, readFileSync, realpathSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DEFAULTS, EXIT, SCHEMA_VERSIONS } from '../../constants';
import { readSecret } from '../../pack/secrets';
import { cacheDir } from '../../spec/digest-store';
import { loadPaths, loadSpecs, type LoadReport } from '../../spec/loader';
import { isWithin } from '../../spec/path-util';
import { formatErrors, githubAnnotations, inGithubActions, type ReadLine } from '../format-errors';
import type { Context } from '../context';
import { plural } from '../diag';
import { gitSourceFrom, peekRevision, type GitFlags } from '../git-flags';
import type * as GitExec from '../../git/exec';

export interface ValidateOptions {
  output: 'text' | 'json';
  resultsRoot: string;
  /** The one path is a revision of a git source (this commit): `fromFile` secrets are errors. */
  revision?: string;
  /** `-v`: also say which files were found but not read as specs, and why. */
  verbose?: boolean;
  /** The results root is berth's default (no --state or --results-root given): one inside the paths is a warning, not an error of each spec. */
  resultsRootIsDefault?: boolean;
  /** Where `fromEnv` secrets are read for the too-short warning (default: this process's). */
  env?: NodeJS.ProcessEnv;
  /** Outcomes of unchanged spec files are kept on disk under this folder between runs (validateCacheIn). */
  cacheIn?: string;
}

/**
 * Where validate keeps the outcomes of unchanged spec files between runs (spec/disk-cache.ts, as
 * reconcile, plan and get keep them under the state folder; keyed by each file's bytes, so an
 * edited file is always read again): `validate/` in the user's cache folder (digest-store.ts
 * cacheDir: $BERTH_CACHE_DIR, empty for none, else $XDG_CACHE_HOME/berth, else ~/.cache/berth),
 * made 0700 if need be. Never the state folder, which validate does not write. Undefined when no
 * cache is kept.
 */
export function validateCacheIn(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const dir = cacheDir(env);
  if (dir === undefined) return undefined;
  const own = path.join(dir, 'validate');
  try {
    mkdirSync(own, { recursive: true, mode: 0o700 });
    return own;
  } catch {
    return undefined;
  }
}

export interface ValidateIo {
  out(s: string): void;
  err(s: string): void;
}

export async function runValidate(paths: string[], opts: ValidateOptions, io: ValidateIo): Promise<number> {
  const given = paths.length > 0 ? paths : [DEFAULTS.specsDir];
  // `validate .` inside the specs folder: the default results root (./.berth/results) lies in it.
  // That is where berth is run from, not a fault of any spec: one warning, and the specs are
  // checked against a results root apart from them.
  const inside = opts.resultsRootIsDefault && opts.revision === undefined ? given.find((p) => isWithin(realOr(p), realOr(opts.resultsRoot))) : undefined;
  const resultsRoot = inside === undefined ? opts.resultsRoot : path.join(os.tmpdir(), 'berth-validate', 'results');
  const report =
    opts.revision !== undefined && paths[0] !== undefined
      ? await loadSpecs({ specsDir: paths[0], resultsRoot, revision: opts.revision })
      : await loadPaths(given, { resultsRoot, ...(opts.cacheIn !== undefined ? { cacheIn: opts.cacheIn } : {}) });
  const valid = report.errors.length === 0;
  const warnings = await shortSecrets(report, opts.env ?? process.env);
  if (inside !== undefined) {
    warnings.unshift(
      `the default results root ${path.relative(process.cwd(), opts.resultsRoot) || '.'} lies inside ${inside}: reconcile run from this folder would refuse every attempt's results there; run berth from another folder or give --results-root`,
    );
  }
  if (opts.output === 'json') {
    const sets = [...(report.sets ?? new Map())].map(([name, set]) => ({ name, valid: set.valid, children: set.children }));
    const body = {
      schemaVersion: SCHEMA_VERSIONS.validate,
      valid,
      ...(opts.revision !== undefined ? { revision: opts.revision } : {}),
      files: report.files.length,
      attempts: report.specs.map((s) => s.spec.name),
      sets,
      errors: report.errors,
      ...(opts.verbose ? { skipped: report.skipped ?? [] } : {}),
      ...(warnings.length ? { warnings } : {}),
    };
    io.out(`${JSON.stringify(body, null, 2)}\n`);
  } else {
    if (!valid) io.err(formatErrors(report.errors, sourceLineReader()));
    if (opts.verbose) for (const k of report.skipped ?? []) io.out(`skipped ${k.file}: ${k.reason}\n`);
    // in GitHub Actions, also as annotations on the spec's lines
    if (!valid && inGithubActions(process.env)) io.err(githubAnnotations(report.errors, { cwd: process.cwd(), workspace: process.env.GITHUB_WORKSPACE }));
    for (const w of warnings) io.err(`warning: ${w}\n`);
    io.out(`${opts.revision !== undefined ? `revision ${opts.revision}: ` : ''}${summary(report)}\n`);
  }
  return valid ? EXIT.ok : EXIT.usage;
}

/**
 * The secrets whose value, read here as the harvest would read it, is shorter than
 * DEFAULTS.redactMinBytes or longer than DEFAULTS.redactMaxBytes (trailing line breaks dropped):
 * not redacted from what berth writes. A
 * secret this process cannot read is no warning here (the run says so if the harvest cannot).
 */
async function shortSecrets(report: LoadReport, env: NodeJS.ProcessEnv): Promise<string[]> {
  const out: string[] = [];
  const seen = new Set<string>();
  for (const { spec } of report.specs) {
    for (const s of spec.secrets) {
      const key = `${s.fromEnv ?? ''}\0${s.fromFile ?? ''}`;
      if (seen.has(key)) continue;
      seen.add(key);
      const v = await readSecret(s, env).catch(() => undefined);
      if (!v) continue;
      let n = v.length;
      while (n > 0 && (v[n - 1] === 0x0a || v[n - 1] === 0x0d)) n--;
      const how =
        n < DEFAULTS.redactMinBytes
          ? `shorter than ${DEFAULTS.redactMinBytes}`
          : n > DEFAULTS.redactMaxBytes
            ? `longer than ${DEFAULTS.redactMaxBytes}`
            : undefined;
      if (how) out.push(`attempt ${spec.name}: secret ${s.name} is ${how} bytes: it will not be redacted from what berth writes for its runs`);
    }
  }
  return out;
}

/** `validate --git URL`: the source's current commit, fetched into a folder of validate's own. */
export async function runValidateGit(ctx: Context, o: GitFlags & { output: 'text' | 'json'; verbose?: boolean }): Promise<number> {
  const git = await gitSourceFrom(ctx, o);
  const verbose = o.verbose ? { verbose: true } : {};
  if (!git) {
    const cacheIn = validateCacheIn(ctx.env);
    return runValidate(
      [ctx.specsDir],
      { output: o.output, resultsRoot: ctx.resultsRoot, env: ctx.env, ...verbose, ...(cacheIn !== undefined ? { cacheIn } : {}) },
      ctx.io,
    );
  }
  let peek: Awaited<ReturnType<typeof peekRevision>>;
  try {
    peek = await peekRevision(git);
  } catch (err) {
    if (!(err instanceof (require('../../git/exec') as typeof GitExec).GitError)) throw err;
    ctx.io.err(`berth: ${git.cfg.url.display}: ${err.message}\n`);
    return EXIT.failed;
  }
  try {
    return await runValidate([peek.dir], { output: o.output, resultsRoot: ctx.resultsRoot, revision: peek.revision, ...verbose }, ctx.io);
  } finally {
    await peek.done();
  }
}

/** The real path of `p`, or of its nearest folder that exists with the rest joined on (a results root not made yet). */
function realOr(p: string): string {
  const abs = path.resolve(p);
  try {
    return realpathSync(abs);
  } catch {
    const up = path.dirname(abs);
    return up === abs ? abs : path.join(realOr(up), path.basename(abs));
  }
}

/** `3 files, 7 attempts: 5 valid, 2 invalid (4 errors)`, or `…: all valid`. */
export function summary(r: LoadReport): string {
  const count = r.unreadableFiles.size - (r.setProtectedFiles?.size ?? 0);
  const unreadable = count > 0 ? ` (${count} unreadable)` : '';
  // An AttemptSet counts as the attempts it declares (its children).
  const sets = [...(r.sets?.values() ?? [])];
  const attempts = r.documents - sets.length + sets.reduce((n, s) => n + s.children.length, 0);
  const fromSets = sets.length ? ` (${plural(sets.length, 'AttemptSet')})` : '';
  const head = `${plural(r.files.length, 'file')}${unreadable}, ${plural(attempts, 'attempt')}${fromSets}`;
  if (r.errors.length === 0) return r.files.length === 0 ? `${head}: no spec files found` : `${head}: all valid`;
  const invalid = Math.max(0, attempts - r.specs.length);
  const badSets = sets.filter((s) => !s.valid).length;
  const setsPart = badSets ? `, ${plural(badSets, 'AttemptSet')} invalid` : '';
  return `${head}: ${r.specs.length} valid, ${invalid} invalid${setsPart} (${plural(r.errors.length, 'error')})`;
}

/**
 * Reads source lines for excerpts, each file once; skips files too large to be specs, and never
 * reads through a link (a spec file linked to a host file outside the specs folder must never
 * be printed; a link inside it just shows no excerpt).
 */
export function sourceLineReader(): ReadLine {
  const cache = new Map<string, string[]>();
  return (file, line) => {
    let lines = cache.get(file);
    if (!lines) {
      let fd: number | undefined;
      try {
        fd = openSync(file, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK);
        const st = fstatSync(fd);
        lines = st.isFile() && st.size <= DEFAULTS.maxSpecFileBytes ? readFileSync(fd, 'utf8').split('\n') : [];
      } catch {
        lines = [];
      } finally {
        if (fd !== undefined) closeSync(fd);
      }
      cache.set(file, lines);
    }
    return lines[line - 1];
  };
}
