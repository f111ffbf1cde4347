/** The report's gathering from a spec load: sets and plain attempts, SET arguments, selectors, records of other spec hashes. */
import { expect } from 'chai';
import { reportFromLoad } from '../../../src/report/from-load';
import type { LoadedSet, LoadedSpec, SetPolicy } from '../../../src/spec/types';
import { spec, status } from '../../support/builders';

const policy: SetPolicy = {
  name: 'ev',
  axes: ['model'],
  maxParallel: null,
  failFast: false,
  maxFailed: null,
  infra: [],
  score: null,
  source: { file: 'ev.yaml', line: 1, col: 1 },
};
const child = (model: string): LoadedSpec => ({ ...spec(`ev-${model}`, { labels: { model } }), set: { set: policy, coords: { model }, index: 0 } });
const specs = [child('a'), child('b'), spec('solo', { labels: { model: 'a' } })];
const sets = new Map<string, LoadedSet>([['ev', { policy, children: ['ev-a', 'ev-b'], coords: [{ model: 'a' }, { model: 'b' }], valid: true }]]);
const statuses = new Map([
  ['ev-a', status('ev-a', { phase: 'Succeeded' })],
  ['ev-b', status('ev-b', { phase: 'Failed', reason: 'Error', specHash: 'an-earlier-hash' })],
  ['gone', status('gone', { phase: 'Succeeded' })],
]);
const o = { now: Date.parse('2026-01-01T00:10:00Z'), instance: 'i', maxRunning: 2, resultsRoot: '/r', linkBase: '/r', mode: 'file' as const };
const all = { sets: [], keep: () => true, selecting: false };

describe('report/from-load', () => {
  it("every set child and plain attempt, a record whose spec is gone among them; a record of an earlier spec hash is not the child's run", () => {
    const d = reportFromLoad({ specs, sets }, statuses, all, o);
    expect(d.attempts.map((a) => [a.name, a.set, a.phase, a.outcome])).to.deep.equal([
      ['ev-a', 'ev', 'Succeeded', 'passed'],
      ['ev-b', 'ev', 'Pending', 'unfinished'],
      ['gone', null, 'Succeeded', 'passed'],
      ['solo', null, 'Pending', 'unfinished'],
    ]);
    expect(d.attempts[1]?.startedAt).to.equal(null);
  });

  it('SET arguments: only their children; a selector: only matching spec labels (a set left with none is left out)', () => {
    expect(reportFromLoad({ specs, sets }, statuses, { ...all, sets: ['ev'] }, o).attempts.map((a) => a.name)).to.deep.equal(['ev-a', 'ev-b']);
    const sel = reportFromLoad({ specs, sets }, statuses, { sets: [], keep: (l) => l.model === 'a', selecting: true }, o);
    expect(sel.attempts.map((a) => a.name)).to.deep.equal(['ev-a', 'solo']);
    const none = reportFromLoad({ specs, sets }, statuses, { sets: [], keep: (l) => l.model === 'z', selecting: true }, o);
    expect(none.sets).to.deep.equal([]);
    expect(none.attempts).to.deep.equal([]);
  });
});
