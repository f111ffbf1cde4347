/** Loading AttemptSets: children as Attempts, labels, hashes, and every bad input as a positioned error. */
import { expect } from 'chai';
import { SET_LABEL } from '../../../src/constants';
import { invalidErrors } from '../../../src/controller/pass';
import { loadSpecs, type LoadReport } from '../../../src/spec/loader';
import { legacyChildName } from '../../../src/spec/set-expand';
import { cleanupTemp, doc, sandbox } from '../spec/helpers';

function set(name: string, body: string, meta = ''): string {
  return `apiVersion: berth.dev/v1
kind: AttemptSet
metadata:
  name: ${name}
${meta}spec:
${body}`;
}

const BASIC = `  matrix:
    model: [m1, m2]
    task: {fromDir: ./tasks}
    seed: {range: [0, 2]}
  maxParallel: 2
  template:
    image: berth/busybox:local
    command: [sh, -c, 'echo \${{ matrix.model }} \${{ matrix.seed }}']
    fixture: ./tasks/\${{ matrix.task }}
`;

const TASKS = { 'tasks/t1/in.txt': 'one', 'tasks/t2/in.txt': 'two', 'tasks/.hidden/x': 'x' };

const names = (r: LoadReport) => r.specs.map((s) => s.spec.name).sort();
const brief = (r: LoadReport) => r.errors.map((e) => ({ line: e.line, col: e.col, path: e.path, code: e.code, attempt: e.attempt, set: e.set }));

describe('sets: loading', () => {
  afterEach(cleanupTemp);

  it('loads each cell as an Attempt: name from coordinates, labels, rendered spec, set membership', async () => {
    const r = await sandbox({ 'set.yaml': set('swe', BASIC, '  labels: {suite: lite}\n'), ...TASKS }).load();
    expect(r.errors).to.deep.equal([]);
    expect(names(r)).to.deep.equal(['swe-m1-0-t1', 'swe-m1-0-t2', 'swe-m1-1-t1', 'swe-m1-1-t2', 'swe-m2-0-t1', 'swe-m2-0-t2', 'swe-m2-1-t1', 'swe-m2-1-t2']);
    const c = r.specs.find((s) => s.spec.name === 'swe-m2-1-t2');
    expect(c?.spec.labels).to.deep.equal({ suite: 'lite', [SET_LABEL]: 'swe', model: 'm2', task: 't2', seed: '1' });
    expect(c?.spec.command).to.deep.equal(['sh', '-c', 'echo m2 1']);
    expect(c?.spec.fixture).to.match(/tasks\/t2$/);
    expect(c?.spec.results).to.equal('swe-m2-1-t2');
    expect(c?.set?.coords).to.deep.equal({ model: 'm2', task: 't2', seed: '1' });
    expect(c?.set?.set).to.include({ name: 'swe', maxParallel: 2, failFast: false, maxFailed: null });
    expect(c?.source).to.include({ line: 4, col: 9 });
    expect(r.sets?.get('swe')).to.include({ valid: true });
    expect(r.sets?.get('swe')?.children).to.have.length(8);
  });

  it('names a child readably whatever its values; one the instance has a record of under its old name keeps that name (and the file cache tells the two loads apart)', async () => {
    const body = `  matrix:
    task: [django-11099, Flask.1, ok]
  template:
    image: berth/busybox:local
    command: [sh, -c, 'echo \${{ matrix.task }}']
`;
    const box = sandbox({ 'set.yaml': set('swe', body) });
    const fresh = await box.load();
    expect(fresh.errors).to.deep.equal([]);
    const readable = fresh.specs.map((x) => x.spec.name);
    expect(readable[0]).to.match(/^swe-django-11099-[0-9a-f]{10}$/);
    expect(readable[1]).to.match(/^swe-flask-1-[0-9a-f]{10}$/);
    expect(readable[2]).to.equal('swe-ok');
    const old = legacyChildName('swe', { task: 'django-11099' });
    const kept = await loadSpecs({ specsDir: box.specs, resultsRoot: box.results, keptNames: new Set([old]) });
    const k = kept.specs.find((x) => x.set?.coords.task === 'django-11099');
    expect(k?.spec.name).to.equal(old);
    // its results folder is its name's, as it was
    expect(k?.spec.results).to.equal(old);
    expect(kept.specs.map((x) => x.spec.name).slice(1)).to.deep.equal(readable.slice(1));
    expect(kept.sets?.get('swe')?.children).to.deep.equal([old, ...readable.slice(1)]);
    expect((await box.load()).specs.map((x) => x.spec.name)).to.deep.equal(readable);
  });

  it('spec.maxChildren: the set policy holds it; fewer children than the set has is an error at the matrix, the default says how to raise it', async () => {
    const raised = await sandbox({ 'set.yaml': set('swe', BASIC.replace('maxParallel: 2', 'maxParallel: 2\n  maxChildren: 8')), ...TASKS }).load();
    expect(raised.errors).to.deep.equal([]);
    expect(raised.specs[0]?.set?.set.maxChildren).to.equal(8);
    const low = await sandbox({ 'set.yaml': set('swe', BASIC.replace('maxParallel: 2', 'maxParallel: 2\n  maxChildren: 7')), ...TASKS }).load();
    expect(low.specs).to.deep.equal([]);
    expect(low.errors.map((e) => [e.path, e.code, e.message])).to.deep.equal([
      ['spec.matrix', 'matrix', "the set has 8 children; this set's spec.maxChildren allows at most 7"],
    ]);
    const range = await sandbox({ 'set.yaml': set('r', '  matrix:\n    seed: {range: [0, 10001]}\n  template:\n    image: busybox\n') }).load();
    expect(range.errors.map((e) => e.message)).to.deep.equal([
      'range [0, 10001] has 10001 values; a set may have at most 10000 children (a guard against a typo flooding the engine); spec.maxChildren raises it on purpose',
    ]);
    for (const bad of ['0', '1000001', '1.5'])
      expect(
        (await sandbox({ 'set.yaml': set('b', BASIC.replace('maxParallel: 2', `maxChildren: ${bad}`)), ...TASKS }).load()).errors.map((e) => e.path),
      ).to.deep.equal(['spec.maxChildren']);
  });

  it('keeps set-level settings out of every child hash; a template edit changes only the children it renders differently', async () => {
    const a = await sandbox({ 'set.yaml': set('swe', BASIC), ...TASKS }).load();
    const settings = BASIC.replace(
      'maxParallel: 2',
      'maxParallel: 5\n  maxChildren: 20000\n  failFast: true\n  maxFailed: 3\n  score: {file: s.json, pass: 0.5}',
    );
    const b = await sandbox({ 'set.yaml': set('swe', settings), ...TASKS }).load();
    const hashes = (r: LoadReport) => Object.fromEntries(r.specs.map((s) => [s.spec.name, s.hash]));
    expect(hashes(b)).to.deep.equal(hashes(a));
    const edited = BASIC.replace(
      "command: [sh, -c, 'echo ${{ matrix.model }} ${{ matrix.seed }}']",
      "command: [sh, -c, 'echo ${{ matrix.model }} ${{ matrix.seed }}']\n    env: {SLOW: '${{ matrix.task }}'}",
    );
    const c = await sandbox({ 'set.yaml': set('swe', edited), ...TASKS }).load();
    expect(Object.values(hashes(c)).filter((h) => Object.values(hashes(a)).includes(h))).to.deep.equal([]);
  });

  it('score.infra: task outcomes a set counts as infrastructure, with or without a score file, outside every child hash', async () => {
    const a = await sandbox({ 'set.yaml': set('swe', BASIC), ...TASKS }).load();
    expect(a.specs[0]?.set?.set).to.deep.include({ score: null, infra: [] });
    const only = await sandbox({ 'set.yaml': set('swe', `${BASIC}  score: {infra: [TimedOut, OOMKilled]}\n`), ...TASKS }).load();
    expect(only.errors).to.deep.equal([]);
    expect(only.specs[0]?.set?.set).to.deep.include({ score: null, infra: ['TimedOut', 'OOMKilled'] });
    const both = await sandbox({ 'set.yaml': set('swe', `${BASIC}  score: {file: s.json, infra: [DiskLimitExceeded, Error]}\n`), ...TASKS }).load();
    expect(both.specs[0]?.set?.set).to.deep.include({ score: { file: 's.json', pass: 1 }, infra: ['DiskLimitExceeded', 'Error'] });
    const hashes = (r: LoadReport) => r.specs.map((s) => s.hash);
    expect(hashes(only)).to.deep.equal(hashes(a));
    expect(hashes(both)).to.deep.equal(hashes(a));
  });

  it('score.infra: an outcome that is no task outcome is an error at its item (never moved the other way); pass without file, an empty score too', async () => {
    const r = await sandbox({ 'set.yaml': set('swe', `${BASIC}  score:\n    infra: [TimedOut, Lost]\n`), ...TASKS }).load();
    expect(brief(r)).to.deep.equal([{ line: 16, col: 23, path: 'spec.score.infra[1]', code: 'schema', attempt: undefined, set: 'swe' }]);
    expect(r.errors[0]?.file).to.match(/specs\/set\.yaml$/);
    expect(r.errors[0]?.message).to.equal(
      '"Lost" is not a task outcome: only TimedOut, OOMKilled, DiskLimitExceeded, Error may be counted as infrastructure (what the attempt could not cause already is)',
    );
    expect(names(r)).to.deep.equal([]);
    expect(r.protectedNames.size).to.equal(8);
    const pass = await sandbox({ 'set.yaml': set('swe', `${BASIC}  score: {pass: 0.5}\n`), ...TASKS }).load();
    expect(brief(pass).map((e) => [e.path, e.code])).to.deep.equal([['spec.score', 'schema']]);
    expect(pass.errors[0]?.message).to.match(/file/);
    const empty = await sandbox({ 'set.yaml': set('swe', `${BASIC}  score: {}\n`), ...TASKS }).load();
    expect(brief(empty).map((e) => [e.path, e.code])).to.deep.equal([['spec.score', 'schema']]);
    const typo = await sandbox({ 'set.yaml': set('swe', `${BASIC}  score: {infra: [timedout]}\n`), ...TASKS }).load();
    expect(typo.errors[0]?.message).to.match(/^"timedout" is not a task outcome/);
  });

  it('reports a ${{ }} naming no axis at its string, protects the children, and leaves other files alone', async () => {
    const bad = BASIC.replace('${{ matrix.seed }}', '${{ matrix.sed }}');
    const r = await sandbox({ 'set.yaml': set('swe', bad), 'other.yaml': doc('other'), ...TASKS }).load();
    expect(brief(r)).to.deep.equal([{ line: 13, col: 23, path: 'spec.template.command[2]', code: 'template', attempt: undefined, set: 'swe' }]);
    expect(r.errors[0]?.message).to.match(/matrix\.sed \}\} names no axis of the matrix \(did you mean "seed"\?\)/);
    expect(names(r)).to.deep.equal(['other']);
    expect([...r.protectedNames].sort())
      .to.have.length(8)
      .and.include('swe-m1-0-t1');
    // Each protected child's Invalid status carries the set's error.
    expect(
      invalidErrors(r)
        .get('swe-m2-1-t2')
        ?.map((e) => e.path),
    ).to.deep.equal(['spec.template.command[2]']);
  });

  it('reports an empty axis, a fromDir outside the specs folder and too many children, each positioned', async () => {
    const empty = BASIC.replace('{range: [0, 2]}', '{range: [2, 2]}');
    const r1 = await sandbox({ 'set.yaml': set('swe', empty), ...TASKS }).load();
    expect(brief(r1)).to.deep.equal([{ line: 9, col: 19, path: 'spec.matrix.seed.range', code: 'matrix', attempt: undefined, set: 'swe' }]);
    // A set whose children cannot be named protects what its file declared.
    expect([...r1.unreadableFiles]).to.deep.equal(['set.yaml']);

    const outside = BASIC.replace('./tasks}', '../..}');
    const r2 = await sandbox({ 'set.yaml': set('swe', outside), ...TASKS }).load();
    expect(brief(r2)).to.deep.equal([{ line: 8, col: 21, path: 'spec.matrix.task.fromDir', code: 'path-escape', attempt: undefined, set: 'swe' }]);

    const flood = BASIC.replace('{range: [0, 2]}', '{range: [0, 100000]}');
    const r3 = await sandbox({ 'set.yaml': set('swe', flood), ...TASKS }).load();
    expect(r3.errors.map((e) => [e.path, e.code])).to.deep.equal([['spec.matrix.seed.range', 'matrix']]);
    expect(r3.errors[0]?.message).to.match(/at most 10000 children/);
    const product = BASIC.replace('{range: [0, 2]}', '{range: [0, 6000]}');
    const r4 = await sandbox({ 'set.yaml': set('swe', product), ...TASKS }).load();
    expect(r4.errors.map((e) => [e.path, e.code])).to.deep.equal([['spec.matrix', 'matrix']]);
    expect(r4.errors[0]?.message).to.match(/24000 children; a set may have at most 10000 children .*spec\.maxChildren raises it on purpose/);
  });

  it('two sets with one name: an error at each, none of their children load', async () => {
    const r = await sandbox({
      'a.yaml': set('swe', BASIC),
      'b.yaml': set('swe', BASIC.replace('[m1, m2]', '[m1, m3]')),
      'c.yaml': doc('fine'),
      ...TASKS,
    }).load();
    expect(r.errors.map((e) => [e.file.replace(/.*\//, ''), e.line, e.path, e.code])).to.deep.equal([
      ['a.yaml', 4, 'metadata.name', 'duplicate-name'],
      ['b.yaml', 4, 'metadata.name', 'duplicate-name'],
    ]);
    expect(names(r)).to.deep.equal(['fine']);
    expect(r.protectedNames).to.include('swe-m3-0-t1').and.include('swe-m1-0-t1');
  });

  it('a child whose name an Attempt also declares: an error at both, neither loads, siblings do', async () => {
    const r = await sandbox({ 'set.yaml': set('swe', BASIC), 'clash.yaml': doc('swe-m1-0-t1'), ...TASKS }).load();
    expect(r.errors.map((e) => [e.file.replace(/.*\//, ''), e.path, e.code, e.attempt])).to.deep.equal([
      ['clash.yaml', 'metadata.name', 'duplicate-name', 'swe-m1-0-t1'],
      ['set.yaml', 'metadata.name', 'duplicate-name', 'swe-m1-0-t1'],
    ]);
    expect(r.errors[1]?.message).to.match(/a child of AttemptSet "swe"/);
    expect(names(r)).to.have.length(7).and.not.include('swe-m1-0-t1');
    expect(r.protectedNames).to.include('swe-m1-0-t1');
  });

  it('a child whose rendered spec is invalid is Invalid alone, its error placed in the template', async () => {
    const body = BASIC.replace('{fromDir: ./tasks}', '[t1, t9]');
    const r = await sandbox({ 'set.yaml': set('swe', body), ...TASKS }).load();
    expect(new Set(r.errors.map((e) => `${e.path} ${e.code} ${e.line}:${e.col}`))).to.deep.equal(new Set(['spec.template.fixture missing-file 14:14']));
    expect(r.errors.map((e) => e.attempt).sort()).to.deep.equal(['swe-m1-0-t9', 'swe-m1-1-t9', 'swe-m2-0-t9', 'swe-m2-1-t9']);
    expect(r.errors[0]?.message).to.match(/child swe-m1-0-t9: model=m1, task=t9, seed=0/);
    expect(names(r)).to.deep.equal(['swe-m1-0-t1', 'swe-m1-1-t1', 'swe-m2-0-t1', 'swe-m2-1-t1']);
  });

  it('validates the set itself with the one schema: unknown fields, bad axis names, positioned', async () => {
    const body = BASIC.replace('maxParallel: 2', 'maxParalel: 2').replace('model: [m1, m2]', 'Model: [m1, m2]');
    const r = await sandbox({ 'set.yaml': set('swe', body), ...TASKS }).load();
    expect(r.errors.map((e) => [e.line, e.path, e.code])).to.deep.equal([
      [7, 'spec.matrix.Model', 'schema'],
      [10, 'spec.maxParalel', 'schema'],
    ]);
    expect(r.errors[1]?.message).to.match(/did you mean "maxParallel"/);
  });

  it('refuses its own label and axis names among the set labels', async () => {
    const r = await sandbox({ 'set.yaml': set('swe', BASIC, `  labels: {model: x, ${SET_LABEL}: y}\n`), ...TASKS }).load();
    expect(r.errors.map((e) => [e.path, e.code])).to.deep.equal([
      ['metadata.labels.model', 'matrix'],
      ['metadata.labels["berth.dev/set"]', 'matrix'],
    ]);
  });
});
