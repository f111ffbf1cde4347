/** The progress line of reconcile --once --wait counts a finished run whose grade is to come as grading, neither done nor running. */
import { expect } from 'chai';
import { progressState } from '../../../src/cli/commands/reconcile';
import { progressText } from '../../../src/cli/progress';
import type { NormalizedGrade } from '../../../src/spec/types';
import { gradeHash } from '../../../src/spec/grade-hash';
import type { LoadResult } from '../../../src/spec/types';
import { spec, status } from '../../support/builders';

const G: NormalizedGrade = {
  image: null,
  command: ['sh', '-c', 'exit 0'],
  env: {},
  fixture: null,
  fixtureDigest: null,
  protect: [],
  deadlineSeconds: null,
  resources: { cpus: null, memoryBytes: null, pids: 512 },
  network: { mode: 'none' },
  when: 'always',
};

describe('progress: runs waiting for their grade, or under it', function () {
  it('counts them apart from done and from Running', function () {
    const specs = ['a', 'b', 'c', 'd'].map((n) => spec(n, { grade: G }));
    const load = { specs, errors: [], protectedNames: new Set(), unreadableFiles: new Set(), unreadableFolders: new Set() } as LoadResult;
    const done = {
      phase: 'Succeeded' as const,
      reason: 'Completed',
      exitCode: 0,
      startedAt: '2026-01-01T00:00:01.000Z',
      finishedAt: '2026-01-01T00:00:02.000Z',
    };
    const grade = (state: 'grading' | 'graded') => ({
      k: 1,
      run: 1,
      gradeHash: gradeHash(G),
      state,
      passed: true,
      resultsDir: '/r',
      image: 'i',
      createdAt: 'x',
    });
    const statuses = new Map([
      ['a', status('a', { ...done, specHash: 'h-a' })],
      ['b', status('b', { ...done, specHash: 'h-b', grades: [grade('grading')] })],
      ['c', status('c', { ...done, specHash: 'h-c', grades: [grade('graded')] })],
      ['d', status('d', { phase: 'Running', specHash: 'h-d' })],
    ]);
    const p = progressState(load, statuses, () => false, undefined);
    expect(progressText(p)).to.equal('1/4 done: 1 passed; 1 Grading, 1 Running, 1 waiting for a grade');
  });
});
