/** A small fleet for the report's unit tests: one set (model × task × seed) with every outcome, and plain attempts. */
import path from 'node:path';
import type { SetChild } from '../../../src/sets/summary';
import type { SetPolicy } from '../../../src/spec/types';
import type { AttemptStatus } from '../../../src/status/types';
import { spec, status } from '../../support/builders';

export const XSS = '</script><img src=x onerror=alert(1)>';
export const ROOT = '/r';
export const T0 = Date.parse('2026-01-02T03:04:00Z');
const at = (s: number) => new Date(T0 + s * 1000).toISOString();

export function fleet(): { sets: Map<string, { policy: SetPolicy; children: SetChild[] }>; statuses: Map<string, AttemptStatus>; plain: LoadedPlain[] } {
  const policy: SetPolicy = {
    name: 'swe',
    axes: ['model', 'task', 'seed'],
    maxParallel: null,
    failFast: false,
    maxFailed: null,
    infra: [],
    score: { file: 'score.json', pass: 1 },
    source: { file: 's.yaml', line: 1, col: 1 },
  };
  const children: SetChild[] = [];
  const statuses = new Map<string, AttemptStatus>();
  // [model, task, seed, phase, reason?, score?, exit?]
  const rows: [string, string, string, AttemptStatus['phase'], string | undefined, number | undefined, number | undefined][] = [
    ['m1', 'add', '0', 'Succeeded', undefined, 1, 0],
    ['m1', 'add', '1', 'Succeeded', undefined, 0, 0],
    ['m1', 'count', '0', 'Succeeded', undefined, 1, 0],
    ['m1', 'count', '1', 'TimedOut', 'DeadlineExceeded', undefined, 137],
    [XSS, 'add', '0', 'Failed', 'Error', 0, 1],
    [XSS, 'add', '1', 'Running', undefined, undefined, undefined],
    [XSS, 'count', '0', 'Succeeded', undefined, 1, 0],
  ];
  rows.forEach(([model, task, seed, phase, reason, score, exit], i) => {
    const name = `swe-${i}`;
    const loaded = {
      ...spec(name, { labels: { model: model === XSS ? 'evil' : model, note: XSS } }),
      set: { set: policy, coords: { model, task, seed }, index: i },
    };
    children.push({ name, coords: loaded.set.coords, loaded });
    const running = phase === 'Running';
    statuses.set(
      name,
      status(name, {
        phase,
        ...(reason ? { reason } : {}),
        ...(score !== undefined ? { score } : {}),
        ...(exit !== undefined ? { exitCode: exit } : {}),
        ...(i === 4 ? { message: `exit 1: ${XSS}` } : {}),
        createdAt: at(0),
        provisionedAt: at(i * 2),
        startedAt: at(i * 2 + 1),
        ...(running ? {} : { finishedAt: at(i * 2 + 5 + i) }),
        resultsDir: path.join(ROOT, name, 'run-1', 'results'),
        // every child ran the set's pinned image
        image: { ref: 'swe/env:1', id: `sha256:${'5e'.repeat(32)}`, repoDigests: [`swe/env@sha256:${'d1'.repeat(32)}`], pinned: true },
      }),
    );
  });
  // A set child whose spec did not load.
  children.push({ name: 'swe-bad', coords: { model: 'm1', task: 'bad', seed: '0' } });
  statuses.set(
    'plain-ok',
    status('plain-ok', {
      phase: 'Succeeded',
      exitCode: 0,
      createdAt: at(1),
      provisionedAt: at(3),
      startedAt: at(4),
      finishedAt: at(9),
      resultsDir: path.join(ROOT, 'plain-ok', 'run-1', 'results'),
      image: { ref: `img:${XSS}`, id: `sha256:${'ab'.repeat(32)}`, repoDigests: [] },
      // spec.grade: its run's exported changes and its grade's log are there (PRESENT)
      grades: [
        {
          k: 1,
          run: 1,
          gradeHash: 'g1',
          state: 'graded',
          passed: true,
          resultsDir: path.join(ROOT, 'plain-ok', 'run-1', 'grade-1', 'results'),
          image: 'grader:1',
          createdAt: at(9),
          // its grader held a slot after the run
          startedAt: at(24),
          finishedAt: at(26),
        },
      ],
    }),
  );
  statuses.set(
    'plain-outside',
    status('plain-outside', {
      phase: 'Failed',
      reason: 'OOMKilled',
      exitCode: 137,
      createdAt: at(2),
      startedAt: at(5),
      finishedAt: at(6),
      resultsDir: '/elsewhere/x/run-1/results',
    }),
  );
  return {
    sets: new Map([['swe', { policy, children }]]),
    statuses,
    plain: [
      { name: 'plain-ok', labels: { suite: 'demo' } },
      { name: 'plain-outside', labels: {} },
      { name: 'plain-new', labels: {} },
    ],
  };
}

/** The files `berth report` would find on disk (report/model.ts runFiles): plain-ok's patch and grade log. */
export const PRESENT: ReadonlySet<string> = new Set([
  path.join(ROOT, 'plain-ok', 'run-1', 'workspace', 'changes.patch'),
  path.join(ROOT, 'plain-ok', 'run-1', 'grade-1', 'logs.txt'),
]);

export interface LoadedPlain {
  name: string;
  labels: Record<string, string>;
}
