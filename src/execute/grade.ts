/**
 * spec.grade's operations (plan/grade.ts plans them): `begin-grade` (the grade recorded
 * `grading`, then its folder made; no engine call), `create-grader`, `copy-in-grader` (one
 * archive: pack/grade-archive.ts), `start-grader` (its start, its start time and deadline
 * recorded) and `finish-grade` (exit code, OOM, logs, the score read only from the grader's own
 * results folder, `grade-<k>/status.json`, the grade recorded final). Each changes the engine at
 * most once; what it met is reported, never judged here. The grader reads the run's workspace,
 * which may hold the run's secrets: its log, its status.json and its record are redacted of them
 * (harvest/redaction.ts).
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { isConflict, isNotFound } from '../engine/errors';
import { engineTime } from '../engine/time';
import type { ContainerDetails } from '../engine/types';
import type { DesiredGrader } from '../desired/grade';
import { stampNonce } from '../ownership';
import { gradeVerdict } from '../plan/grade-verdict';
import type { AttemptAction, OpOutcome, Operation } from '../plan/types';
import { writeFileAtomic } from '../status/atomic-file';
import type { AttemptStatus, GradeRecord } from '../status/types';
import { assertFoldersBelow, atFd, componentsBelow, mkdirBelow, openDirBelow } from '../util/no-follow';
import { containerHolder } from './conflict';
import { iso, type ExecContext } from './context';
import { imageProvenance } from './image-provenance';
import { DEFAULT_CAPS } from '../harvest/manifest';
import { graderArchive } from '../pack/grade-archive';
import { DEFAULT_LIMITS, saveLog } from './harvest';
import { withLateOom } from './late-oom';
import { DONE, outcomeOf } from './outcome';
import { runRedaction, sourcesFor } from '../harvest/redaction';
import { resultsBase } from '../harvest/run-folder';
import { readScore } from '../harvest/score';

/** The results root below which the grade's folders are made and checked with no link followed. */
function baseOf(x: ExecContext, d: DesiredGrader): string {
  return resultsBase(x.deps.resultsRoot, path.join(d.runDir, 'results'));
}

/** The record with grade (run, k) changed by `f` (a grade the record does not hold: unchanged). */
function withGrade(r: AttemptStatus, run: number, k: number, f: (g: GradeRecord) => GradeRecord): AttemptStatus {
  const grades = r.grades ?? [];
  const i = grades.findIndex((g) => g.run === run && g.k === k);
  if (i < 0) return r;
  const next = [...grades];
  next[i] = f(grades[i] as GradeRecord);
  return { ...r, grades: next };
}

function gradeOf(r: AttemptStatus, run: number, k: number): GradeRecord | undefined {
  return r.grades?.find((g) => g.run === run && g.k === k);
}

/**
 * `begin-grade`: the grade recorded `grading` first (a berth killed from here on resumes this
 * very grade), then `grade-<k>/results` made below the results root with no link followed:
 * exclusively for a new grade; a resumed one's is emptied (what a grader cut short wrote there is
 * never read as its verdict).
 */
export async function beginGrade(x: ExecContext, a: AttemptAction, { grader: d, fresh }: Extract<Operation, { type: 'begin-grade' }>): Promise<OpOutcome> {
  const at = iso(x.now());
  await x.records.update(a, (r) => {
    const { regradeRequested: _r, ...rest } = r;
    const known = gradeOf(r, d.run, d.k);
    if (known) {
      return withGrade(rest, d.run, d.k, (g) => {
        const { containerId: _c, startedAt: _s, deadlineAt: _d, imageId: _i, ...keep } = g;
        return { ...keep, state: 'grading', gradeHash: d.gradeHash, image: d.container.create.image };
      });
    }
    const g: GradeRecord = {
      k: d.k,
      run: d.run,
      gradeHash: d.gradeHash,
      state: 'grading',
      resultsDir: d.resultsDir,
      image: d.container.create.image,
      createdAt: at,
    };
    return { ...rest, grades: [...(r.grades ?? []), g] };
  });
  const base = baseOf(x, d);
  const gradeDir = path.dirname(d.resultsDir);
  try {
    if (!fresh) {
      // emptied: the folder and everything below it removed (fs.rm never follows a link), then made again
      const parent = await openDirBelow(base, componentsBelow(base, path.dirname(gradeDir)));
      try {
        await fsp.rm(atFd(parent.fd, path.basename(gradeDir)), { recursive: true, force: true });
      } finally {
        await parent.close();
      }
    }
    await mkdirBelow(base, gradeDir, { exclusiveLast: fresh });
    await mkdirBelow(base, d.resultsDir, d.owner ? { owner: d.owner } : {});
  } catch (err) {
    return outcomeOf(err);
  }
  return DONE;
}

/**
 * `create-grader`: a fresh container of the grade's image, with a fresh nonce, its only bind the
 * grade's results folder (checked right before). On a backend whose containers write their
 * results elsewhere (a swarm node's volume), that bind names the folder its results come home to
 * (finish-grade's collect), as a run's does.
 */
export async function createGrader(x: ExecContext, a: AttemptAction, { grader: d }: Extract<Operation, { type: 'create-grader' }>): Promise<OpOutcome> {
  const { engine } = x.deps;
  let id: string;
  try {
    await assertFoldersBelow(baseOf(x, d), d.resultsDir);
    id = await engine.containers.create(stampNonce(d.container.create));
  } catch (err) {
    if (!isConflict(err)) return outcomeOf(err);
    const existing = await engine.containers.inspect(d.container.name);
    const owner = await containerHolder(x, existing);
    return { type: 'conflict', kind: 'container', name: d.container.name, id: existing.id, owner };
  }
  await x.records.update(a, (r) => withGrade(r, d.run, d.k, (g) => ({ ...g, containerId: id })));
  return { type: 'done', made: id };
}

/** The grader's container as the record (or the create just before) names it. */
async function graderId(x: ExecContext, a: AttemptAction, d: DesiredGrader, made: string | undefined): Promise<string> {
  return made ?? gradeOf(await x.records.current(a), d.run, d.k)?.containerId ?? d.container.name;
}

/** `copy-in-grader`: spec.fixture, the run's exported changes less `protect`, grade.fixture: one archive. */
export async function copyInGrader(
  x: ExecContext,
  a: AttemptAction,
  { grader: d }: Extract<Operation, { type: 'copy-in-grader' }>,
  made: string | undefined,
): Promise<OpOutcome> {
  const id = await graderId(x, a, d, made);
  let input;
  try {
    input = await graderArchive({
      runDir: d.runDir,
      fixture: d.fixture,
      // the fixture's packed layers, as the attempt's copy used them (packed now if the cache lost them)
      ...(x.deps.fixtureCache ? { packed: { layers: d.fixtureLayers, cache: x.deps.fixtureCache } } : {}),
      gradeFixture: d.grade.fixture,
      protect: d.grade.protect,
      workingDir: d.workingDir,
      owner: d.owner,
    });
  } catch (err) {
    // what the grader was to be given cannot be read as it must be: the grade cannot judge the run
    const why = err instanceof Error ? err.message : String(err);
    return { type: 'unsafe-path', message: `its input could not be made: ${why}`, containerId: id };
  }
  // packed as the engine reads it; a packing that cannot go on ends the copy, and the grader never starts
  try {
    const packing = input.pack();
    let copyError: unknown;
    try {
      await x.deps.engine.containers.putArchive(id, '/', packing.body);
    } catch (err) {
      copyError = err;
      packing.stop();
    }
    try {
      await packing.done;
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      return { type: 'unsafe-path', message: `its input could not be made: ${why}`, containerId: id };
    }
    if (copyError !== undefined) return outcomeOf(copyError, id);
  } finally {
    await input.dispose();
  }
  const { workspace, notes } = input;
  await x.records.update(a, (r) => withGrade(r, d.run, d.k, (g) => ({ ...g, workspace, ...(notes.length ? { notes } : {}) })));
  return DONE;
}

/** `start-grader`: its start (unless `found` runs already), then its start time, deadline and image id recorded. */
export async function startGrader(
  x: ExecContext,
  a: AttemptAction,
  { grader: d, id: found }: Extract<Operation, { type: 'start-grader' }>,
  made: string | undefined,
): Promise<OpOutcome> {
  const id = found ?? (await graderId(x, a, d, made));
  let details: ContainerDetails;
  try {
    if (!found) await x.deps.engine.containers.start(id);
    details = await x.deps.engine.containers.inspect(id);
  } catch (err) {
    return outcomeOf(err, id);
  }
  const startedMs = engineTime(details.runState.startedAt) ?? x.now();
  const deadline = d.grade.deadlineSeconds;
  // the grader's image as the attempt's is recorded (provenance); one the engine cannot say more of keeps its id alone
  const prov = details.imageId ? await imageProvenance(x.deps.engine, d.container.create.image, details.imageId).catch(() => undefined) : undefined;
  await x.records.update(a, (r) =>
    withGrade(r, d.run, d.k, (g) => ({
      ...g,
      containerId: details.id,
      // the id the engine names the image by (a swarm task reports its service's reference: inspected to its id)
      ...(prov?.id || details.imageId ? { imageId: prov?.id || details.imageId } : {}),
      ...(prov?.repoDigests.length ? { repoDigests: prov.repoDigests } : {}),
      startedAt: iso(startedMs),
      ...(deadline !== null ? { deadlineAt: iso(startedMs + deadline * 1000) } : {}),
    })),
  );
  return DONE;
}

/** Whether the attempt's own results hold `file` (a score it wrote for itself: ignored with a grade). */
async function attemptWrote(runResults: string | undefined, file: string): Promise<boolean> {
  if (!runResults) return false;
  const parts = file.split('/').filter((p) => p !== '' && p !== '.');
  const name = parts.pop();
  if (!name || parts.includes('..')) return false;
  try {
    const dir = await openDirBelow(runResults, parts);
    try {
      await fsp.lstat(atFd(dir.fd, name));
      return true;
    } finally {
      await dir.close();
    }
  } catch {
    return false;
  }
}

/**
 * `finish-grade`: the grade's end: the facts (the grader's exit, the score it wrote into its own
 * results folder) gathered for its verdict (plan/grade-verdict.ts). `forced`: ended by the planner
 * (deadline, superseded) or a grader that could not run. Its logs and status.json go into `grade-<k>/`; on a backend whose
 * graders write their results elsewhere (a swarm node), its results are brought home first.
 */
export async function finishGrade(x: ExecContext, a: AttemptAction, op: Extract<Operation, { type: 'finish-grade' }>): Promise<OpOutcome> {
  const rec = await x.records.current(a);
  const g = gradeOf(rec, op.run, op.k);
  if (!g) return DONE; // no such grade: nothing to finish
  let details: ContainerDetails | undefined;
  if (op.id) {
    try {
      details = await x.deps.engine.containers.inspect(op.id);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
  const st = details && !op.forced ? await withLateOom(x.deps.engine, details.id, details.runState, x.deps.signal) : details?.runState;
  const exited = st && !st.running && engineTime(st.startedAt) !== undefined;
  const gradeDir = path.dirname(g.resultsDir);
  const notes = [...(g.notes ?? [])];
  const base = g.resultsDir ? resultsBase(x.deps.resultsRoot, path.join(path.dirname(gradeDir), 'results')) : undefined;
  // a backend whose graders write their results elsewhere (a swarm node's volume) brings them
  // home first, into the folder begin-grade made (found again with no link followed), as a run's
  const collect = x.deps.engine.remote?.collect.bind(x.deps.engine.remote);
  if (collect && base && op.id && details) {
    await assertFoldersBelow(base, g.resultsDir);
    // within the default caps, streamed: a grader's results are bounded as a run's (a swarm node's collect)
    await collect(op.id, g.resultsDir, DEFAULT_CAPS);
  }
  const read = op.score && !op.forced ? await readScore(g.resultsDir, op.score.file) : undefined;
  if (op.score && !op.forced && (await attemptWrote(rec.resultsDir, op.score.file)))
    notes.push(`the attempt's own ${op.score.file} is ignored: with spec.grade the score comes from the grader only`);
  const end = gradeVerdict({
    ...(op.forced ? { forced: op.forced } : {}),
    ...(op.score && read ? { score: { ...op.score, read } } : {}),
    ...(exited ? { exit: { exitCode: st.exitCode, oomKilled: st.oomKilled } } : {}),
  });
  const finishedMs = engineTime(st?.finishedAt) ?? x.now();
  const d = a.desired;
  const rr = await runRedaction(sourcesFor(rec, d ? { hash: d.hash, secrets: d.loaded.spec.secrets } : undefined), x.deps.env);
  const final: GradeRecord = rr.redactor.redactJson({
    ...g,
    ...end,
    ...(exited ? { exitCode: st.exitCode, ...(st.oomKilled ? { oomKilled: true } : {}) } : {}),
    ...(details?.imageId && !g.imageId ? { imageId: details.imageId } : {}),
    ...(notes.length || rr.warnings.length ? { notes: [...notes, ...rr.warnings.filter((w) => !notes.includes(w))] } : {}),
    finishedAt: iso(finishedMs),
  });
  if (base) {
    // the grade's folder exists (begin-grade made it); found again with no link followed
    await assertFoldersBelow(base, gradeDir);
    const logMax = (x.deps.harvest ?? DEFAULT_LIMITS).logMaxBytes;
    if (op.id && details) await saveLog(x.deps.engine, op.id, path.join(gradeDir, 'logs.txt'), logMax, undefined, rr.redactor);
    const status = rr.redactor.redactJson({ attempt: rec.name, run: rec.run, phase: rec.phase, reason: rec.reason, exitCode: rec.exitCode, grade: final });
    await writeFileAtomic(path.join(gradeDir, 'status.json'), JSON.stringify(status, null, 2) + '\n');
  }
  await x.records.update(a, (r) => withGrade(r, op.run, op.k, () => final));
  return DONE;
}
