/**
 * desiredGrader: the grader of grade `k` of run `run` (spec.grade), pure. A fresh container,
 * never the attempt's nor an image of it: the grade's image (default the attempt's image, by
 * reference), berth's labels with component `grader` and the grade's number, no network, the
 * grade's limits, the attempt's hardening (every capability dropped, no-new-privileges, a pids
 * limit, its log cap), and one bind: the grade's own results folder at /results. Nothing of the
 * attempt is mounted: its fixture and exported changes go in as one archive before the start.
 */
import path from 'node:path';
import { COMPONENTS, DEFAULTS, LABELS, graderName } from '../constants';
import type { ContainerCreateSpec } from '../engine/types';
import type { FixtureLayer, LoadedSpec, NormalizedGrade } from '../spec/types';
import { attemptLabels, hardened, withComponent } from './attempt';

export interface DesiredGrader {
  attempt: string;
  run: number;
  k: number;
  gradeHash: string;
  grade: NormalizedGrade;
  /** The run's folder (`run-<n>`): its `workspace/` holds the exported changes. */
  runDir: string;
  /** `run-<n>/grade-<k>/results`: the grader's only bind, at /results. */
  resultsDir: string;
  /** The uid:gid its working dir, archive and results folder belong to: spec.user when it runs the attempt's image; else root (the image's user runs it). */
  owner: { uid: number; gid: number } | null;
  /** spec.fixture (its layers' real paths, in order) and spec.workingDir: what the grader starts from. */
  fixture: string[];
  /** The same layers with their digests (the packed layers the attempt's copy used are found by them). */
  fixtureLayers: FixtureLayer[];
  fixtureDigest: string | null;
  workingDir: string;
  container: { name: string; create: ContainerCreateSpec };
}

/** `run-<n>/grade-<k>/results` of the run whose results folder is `runResults`. */
export function gradeResultsDir(runResults: string, k: number): string {
  return path.join(path.dirname(path.resolve(runResults)), `grade-${k}`, 'results');
}

const sortedEnv = (env: Record<string, string>): string[] =>
  Object.entries(env)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`);

/**
 * @param runResults the run's results folder (the record's `resultsDir`); the grade's folder is beside it.
 * @param image the image to run: spec.grade.image, else the attempt's (the caller may give the id the run recorded).
 */
export function desiredGrader(
  instance: string,
  loaded: LoadedSpec,
  grade: NormalizedGrade,
  gradeHash: string,
  run: number,
  k: number,
  runResults: string,
  image: string,
): DesiredGrader {
  const s = loaded.spec;
  const resultsDir = gradeResultsDir(runResults, k);
  const owner = grade.image === null ? s.user : null;
  const name = graderName(instance, s.name, run, k);
  const labels = { ...withComponent(attemptLabels(instance, loaded, run), COMPONENTS.grader), [LABELS.grade]: String(k) };
  return {
    attempt: s.name,
    run,
    k,
    gradeHash,
    grade,
    runDir: path.dirname(path.resolve(runResults)),
    resultsDir,
    owner,
    fixture: s.fixtureLayers.map((l) => l.path),
    fixtureLayers: s.fixtureLayers.map((l) => ({ path: l.path, digest: l.digest })),
    fixtureDigest: s.fixtureDigest,
    workingDir: s.workingDir,
    container: {
      name,
      create: {
        name,
        image,
        cmd: grade.command,
        env: sortedEnv(grade.env),
        workingDir: s.workingDir,
        labels,
        ...(owner ? { user: `${owner.uid}:${owner.gid}` } : {}),
        stopTimeout: DEFAULTS.stopGraceSeconds,
        host: hardened('none', {
          binds: [`${resultsDir}:${DEFAULTS.resultsMount}:rw`],
          ...(grade.resources.cpus !== null ? { nanoCpus: Math.round(grade.resources.cpus * 1e9) } : {}),
          ...(grade.resources.memoryBytes !== null ? { memory: grade.resources.memoryBytes, memorySwap: grade.resources.memoryBytes } : {}),
          pidsLimit: grade.resources.pids,
        }),
      },
    },
  };
}
