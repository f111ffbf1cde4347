/**
 * `berth logs NAME... | -l SELECTOR [-f] [--run N] [--sidecar NAME] [--grade [K]] [--tail N]`: a run's log (the main
 * container's, a sidecar's, or its grader's) from its container while the run goes on, from the harvested file
 * (`run-<n>/logs.txt`, `run-<n>/sidecars/<name>.log`) once it is finished, and from that file too
 * when the engine cannot be reached (with a note on stderr). Earlier runs exist only as files.
 * The harvested files are redacted already; a live log is redacted here, of the secrets this
 * process can read from the sources the run's record names (one it cannot is said on stderr).
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { containerName, EXIT, FINISHED_PHASES, NAMING } from '../../constants';
import { describeEngineError, isEngineDown, isNotFound } from '../../engine/errors';
import type { AttemptStatus } from '../../status/types';
import { runRedaction } from '../../harvest/redaction';
import { UsageError, type Context } from '../context';
import { diag } from '../diag';

export interface LogsOptions {
  follow?: boolean;
  run?: number;
  sidecar?: string;
  tail?: number;
  /** `--grade [K]`: the grader's log of grade K of the run (true: its latest), not the attempt's. */
  grade?: number | true;
}

/** The run folder of run `run` of the attempt (`<results>/run-<n>`), or undefined when none is known. */
function runFolder(rec: AttemptStatus, run: number): string | undefined {
  const own = run === rec.run ? rec.resultsDir : rec.history.find((h) => h.run === run)?.resultsDir;
  if (own) return path.dirname(own);
  // runs are numbered folders beside one another: derive from the current run's
  return rec.resultsDir ? path.join(path.dirname(path.dirname(rec.resultsDir)), `run-${run}`) : undefined;
}

export function lastLines(text: string, n: number | undefined): string {
  if (n === undefined) return text;
  if (n === 0) return '';
  const lines = text.split('\n');
  const trailing = lines[lines.length - 1] === '' ? lines.pop() : undefined;
  return lines.slice(-n).join('\n') + (trailing !== undefined ? '\n' : '');
}

async function readIfThere(file: string): Promise<string | undefined> {
  try {
    return await fs.readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/**
 * The runs of attempt `name` with a harvested log in its default run folders
 * (`<resultsRoot>/<name>/run-<n>/logs.txt`), ascending: what is left of an attempt whose spec
 * was removed (its record forgotten with it). No link is followed.
 */
export async function harvestedRuns(resultsRoot: string, name: string): Promise<number[]> {
  if (!/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/.test(name)) return [];
  const base = path.join(resultsRoot, name);
  const st = await fs.lstat(base).catch(() => undefined);
  if (!st?.isDirectory()) return [];
  const runs: number[] = [];
  for (const n of await fs.readdir(base).catch(() => [] as string[])) {
    const m = /^run-([1-9][0-9]{0,8})$/.exec(n);
    if (!m) continue;
    const dir = await fs.lstat(path.join(base, n)).catch(() => undefined);
    const log = dir?.isDirectory() ? await fs.lstat(path.join(base, n, 'logs.txt')).catch(() => undefined) : undefined;
    if (log?.isFile()) runs.push(Number(m[1]));
  }
  return runs.sort((a, b) => a - b);
}

export async function runLogs(ctx: Context, name: string, o: LogsOptions): Promise<number> {
  const rec = await ctx.store().get(name);
  if (o.grade !== undefined) return gradeLogs(ctx, name, rec, o);
  // no record (its spec was removed, and its record with it): its harvested logs, if they are there
  const gone = rec ? [] : await harvestedRuns(ctx.resultsRoot, name);
  const run = o.run ?? rec?.run ?? gone.at(-1);
  if (o.run !== undefined && !rec && !gone.includes(o.run))
    throw new UsageError(
      `--run ${o.run}: attempt ${JSON.stringify(name)} has ${gone.length ? `harvested logs of runs ${gone.join(', ')} only` : 'no recorded runs'}`,
    );
  if (rec && run !== undefined && (run < 1 || run > rec.run)) throw new UsageError(`--run ${run}: attempt ${name} has runs 1 to ${rec.run}`);
  if (!rec && run !== undefined) {
    const dir = path.join(ctx.resultsRoot, name, `run-${run}`);
    const text = await readIfThere(o.sidecar ? path.join(dir, 'sidecars', `${o.sidecar}.log`) : path.join(dir, 'logs.txt'));
    if (text !== undefined && !o.follow) {
      ctx.io.out(lastLines(text, o.tail));
      return EXIT.ok;
    }
    if (o.follow) throw new UsageError(`-f: attempt ${name} is gone (no spec, no record); berth logs ${name} prints its harvested log`);
  }
  const dir = rec && run !== undefined ? runFolder(rec, run) : undefined;
  const file = dir ? (o.sidecar ? path.join(dir, 'sidecars', `${o.sidecar}.log`) : path.join(dir, 'logs.txt')) : undefined;
  const what = `${o.sidecar ? `sidecar ${o.sidecar} of ` : ''}${name}${run !== undefined ? ` run ${run}` : ''}`;
  const current = !rec || run === rec.run;
  const finished = !!rec && FINISHED_PHASES.has(rec.phase);

  // The run is over and its log harvested (or it is an earlier run): the file says it all, no engine needed.
  const harvested = file && (!current || (finished && !o.follow)) ? await readIfThere(file) : undefined;
  if (harvested !== undefined) {
    ctx.io.out(lastLines(harvested, o.tail));
    return EXIT.ok;
  }
  if (current) {
    const id = o.sidecar ? NAMING.sidecar(ctx.instance, name, o.sidecar) : (rec?.containerId ?? containerName(ctx.instance, name));
    try {
      const raw = await ctx.engine().containers.logs(id, { follow: !!o.follow, ...(o.tail !== undefined ? { tail: o.tail } : {}) });
      const rr = await runRedaction(rec?.secretSources, ctx.env);
      for (const w of rr.warnings) diag(ctx, 'warn', w.replace(/at the harvest: .*$/, 'here: it is not redacted from this live log'));
      const stream = rr.redactor.empty ? raw : raw.pipe(rr.redactor.stream());
      if (stream !== raw) raw.on('error', (err) => stream.destroy(err));
      // Chunk by chunk, never the whole log at once; a character split between chunks is kept whole.
      const text = new StringDecoder('utf8');
      for await (const chunk of stream) ctx.io.out(Buffer.isBuffer(chunk) ? text.write(chunk) : String(chunk));
      const rest = text.end();
      if (rest) ctx.io.out(rest);
      return EXIT.ok;
    } catch (err) {
      if (isEngineDown(err)) {
        const text = file ? await readIfThere(file) : undefined;
        // The engine's message on a line of its own: the same one every command gives.
        diag(ctx, text === undefined ? 'error' : 'warn', describeEngineError(err));
        if (text === undefined) {
          diag(ctx, 'error', `no harvested log of ${what} to show instead`);
          return EXIT.failed;
        }
        diag(ctx, 'warn', `showing the harvested log of ${what}`);
        ctx.io.out(lastLines(text, o.tail));
        return EXIT.ok;
      }
      if (!isNotFound(err)) throw err;
    }
    const text = file ? await readIfThere(file) : undefined;
    if (text !== undefined) {
      ctx.io.out(lastLines(text, o.tail));
      return EXIT.ok;
    }
  }
  diag(
    ctx,
    'error',
    `no logs for ${what}: no container and no harvested log${file ? ` (${file})` : ''}; it has not run yet, or its results were removed (berth describe shows its runs)`,
  );
  return EXIT.failed;
}

/**
 * `--grade [K]`: the log of a run's grader (spec.grade), grade K (default: the run's latest):
 * from its container while the grade is under way, else from `run-<n>/grade-<k>/logs.txt`.
 */
async function gradeLogs(ctx: Context, name: string, rec: AttemptStatus | undefined, o: LogsOptions): Promise<number> {
  if (o.sidecar !== undefined) throw new UsageError('--grade and --sidecar: a grader has no sidecars; give one of them');
  const run = o.run ?? rec?.run;
  const grades = (rec?.grades ?? []).filter((g) => g.run === run);
  if (!rec || grades.length === 0) {
    diag(
      ctx,
      'error',
      `${name}${run !== undefined ? ` run ${run}` : ''} has no grade (spec.grade grades a run once it has finished; berth describe shows its grades)`,
    );
    return EXIT.failed;
  }
  const g = o.grade === true ? grades.at(-1) : grades.find((x) => x.k === o.grade);
  if (!g) throw new UsageError(`--grade ${String(o.grade)}: run ${run} of ${name} has grades ${grades.map((x) => x.k).join(', ')}`);
  const file = path.join(path.dirname(g.resultsDir), 'logs.txt');
  if (g.state === 'grading' && g.containerId) {
    try {
      const raw = await ctx.engine().containers.logs(g.containerId, { follow: !!o.follow, ...(o.tail !== undefined ? { tail: o.tail } : {}) });
      // redacted as the harvested grade log is, of the run's secrets this process can read
      const rr = await runRedaction(rec.secretSources, ctx.env);
      const stream = rr.redactor.empty ? raw : raw.pipe(rr.redactor.stream());
      if (stream !== raw) raw.on('error', (err) => stream.destroy(err));
      const text = new StringDecoder('utf8');
      for await (const chunk of stream) ctx.io.out(Buffer.isBuffer(chunk) ? text.write(chunk) : String(chunk));
      const rest = text.end();
      if (rest) ctx.io.out(rest);
      return EXIT.ok;
    } catch (err) {
      if (!isEngineDown(err) && !isNotFound(err)) throw err;
    }
  }
  const text = await readIfThere(file);
  if (text === undefined) {
    diag(
      ctx,
      'error',
      `no log of grade ${g.k} of ${name} run ${g.run} (${file})${g.state === 'grading' ? ': the grade is under way and its grader cannot be read' : ''}`,
    );
    return EXIT.failed;
  }
  ctx.io.out(lastLines(text, o.tail));
  return EXIT.ok;
}

/**
 * The logs of several attempts (a set, several names, -l): each after a `==> attempt/NAME <==`
 * line, as `tail` shows several files. `-f` follows one attempt.
 */
export async function runLogsOf(ctx: Context, names: readonly string[], o: LogsOptions): Promise<number> {
  if (names.length === 1) return runLogs(ctx, names[0] as string, o);
  if (o.follow) throw new UsageError(`-f follows one attempt, and ${names.length} were chosen: berth logs NAME -f`);
  let code: number = EXIT.ok;
  for (const [i, name] of names.entries()) {
    ctx.io.out(`${i ? '\n' : ''}==> attempt/${name} <==\n`);
    const c = await runLogs(ctx, name, o);
    if (c !== EXIT.ok) code = c;
  }
  return code;
}
