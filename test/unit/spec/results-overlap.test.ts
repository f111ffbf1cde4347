/** Results folders of different attempts never overlap: equal, nested either way, or through a link. */
import { expect } from 'chai';
import { mkdirSync, symlinkSync } from 'node:fs';
import * as path from 'node:path';
import { cleanupTemp, doc, sandbox } from './helpers';

const SET = (results: string) => `apiVersion: berth.dev/v1
kind: AttemptSet
metadata:
  name: s
spec:
  matrix:
    seed: [a, b]
  template:
    image: berth/busybox:local
${results}`;

describe('spec/results folders of different attempts', () => {
  afterEach(cleanupTemp);

  it('refuses one inside another, at both, naming the other; the rest loads', async () => {
    const r = await sandbox({ 'a.yaml': doc('a'), 'b.yaml': doc('b', '  results: a/run-1/results/i2\n'), 'c.yaml': doc('c') }).load();
    expect(r.specs.map((s) => s.spec.name)).to.deep.equal(['c']);
    expect(r.errors.map((e) => [path.basename(e.file), e.code, e.path, e.attempt])).to.deep.equal([
      ['a.yaml', 'results-overlap', 'spec.results', 'a'],
      ['b.yaml', 'results-overlap', 'spec.results', 'b'],
    ]);
    expect(r.errors[0]?.message).to.match(/contains the results folder of attempt "b" \("a\/run-1\/results\/i2", .*b\.yaml:4:9\)/);
    expect(r.errors[1]?.message).to.match(/lies inside the results folder of attempt "a" \("a", .*a\.yaml:4:9\)/);
    expect([...r.protectedNames].sort()).to.deep.equal(['a', 'b']);
  });

  it('refuses two attempts sharing one results folder', async () => {
    const r = await sandbox({ 'a.yaml': doc('a', '  results: shared\n'), 'b.yaml': doc('b', '  results: ./shared/\n') }).load();
    expect(r.specs).to.deep.equal([]);
    expect(r.errors.map((e) => e.message)).to.satisfy((m: string[]) => m.every((x) => x.includes('is the same folder as')));
  });

  it('refuses a link on the way below the results root where the spec writes it (berth would never follow it)', async () => {
    const sb = sandbox({ 'a.yaml': doc('a', '  results: real\n'), 'b.yaml': doc('b', '  results: alias/sub\n') });
    mkdirSync(path.join(sb.results, 'real'), { recursive: true });
    symlinkSync('real', path.join(sb.results, 'alias'));
    const r = await sb.load();
    expect(r.specs.map((s) => s.spec.name)).to.deep.equal(['a']);
    expect(r.errors.map((e) => [e.attempt, e.code, e.path, e.line])).to.deep.equal([['b', 'path-escape', 'spec.results', 7]]);
    expect(r.errors[0]?.message).to.include('passes through a link below the results root');
  });

  it("keeps an AttemptSet's children apart: each has its own folder by default, a shared one is refused", async () => {
    const own = await sandbox({ 's.yaml': SET('') }).load();
    expect(own.errors).to.deep.equal([]);
    expect(own.specs.map((s) => s.spec.results)).to.deep.equal(['s-a', 's-b']);
    const shared = await sandbox({ 's.yaml': SET('    results: all\n') }).load();
    expect(shared.specs).to.deep.equal([]);
    expect(shared.errors.map((e) => [e.set, e.attempt, e.code])).to.deep.equal([
      ['s', 's-a', 'results-overlap'],
      ['s', 's-b', 'results-overlap'],
    ]);
    // per child, by coordinates: apart again
    const apart = await sandbox({ 's.yaml': SET('    results: runs/${{ matrix.seed }}\n') }).load();
    expect(apart.errors).to.deep.equal([]);
  });

  it('among many attempts (folders right under the root kept by name, the root listed once): equal and nested folders still refused', async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 20; i++) files[`t${String(i).padStart(2, '0')}.yaml`] = doc(`t${String(i).padStart(2, '0')}`);
    files['in.yaml'] = doc('in', '  results: t03/run-1/x\n');
    files['same.yaml'] = doc('same', '  results: ./t05/\n');
    files['near.yaml'] = doc('near', '  results: t07-b\n');
    // the first names under the root are looked up one by one, the rest from its listing: zz (listed) and t01 (looked up) share one
    files['zz.yaml'] = doc('zz', '  results: t01\n');
    // two folders deeper down (their whole paths)
    files['deep1.yaml'] = doc('deep1', '  results: deep/one\n');
    files['deep2.yaml'] = doc('deep2', '  results: deep/one\n');
    const sb = sandbox(files);
    for (let i = 0; i < 20; i += 2) mkdirSync(path.join(sb.results, `t${String(i).padStart(2, '0')}`), { recursive: true });
    const r = await sb.load();
    expect(r.errors.map((e) => [e.attempt, e.code])).to.have.deep.members([
      ['t03', 'results-overlap'],
      ['in', 'results-overlap'],
      ['t05', 'results-overlap'],
      ['same', 'results-overlap'],
      ['t01', 'results-overlap'],
      ['zz', 'results-overlap'],
      ['deep1', 'results-overlap'],
      ['deep2', 'results-overlap'],
    ]);
    const msg = (a: string) => r.errors.find((e) => e.attempt === a)?.message ?? '';
    expect(msg('t03')).to.match(/^results folder "t03" \(\/.*\/results\/t03\) contains the results folder of attempt "in"/);
    expect(msg('in')).to.match(/lies inside the results folder of attempt "t03"/);
    expect(msg('t05')).to.match(/is the same folder as the results folder of attempt "same"/);
    expect(msg('same')).to.match(/is the same folder as the results folder of attempt "t05"/);
    expect(msg('zz')).to.match(/^results folder "t01" \(\/.*\/results\/t01\) is the same folder as the results folder of attempt "t01"/);
    expect(msg('t01')).to.match(/is the same folder as the results folder of attempt "zz"/);
    expect(msg('deep2')).to.match(/^results folder "deep\/one" \(\/.*\/results\/deep\/one\) is the same folder as the results folder of attempt "deep1"/);
    expect(r.specs.map((s) => s.spec.name)).to.have.length(18);
    expect(r.specs.map((s) => s.spec.name)).to.include.members(['near', 't07', 't00', 't19']);
  });

  it('lets folders that merely share a prefix be', async () => {
    const r = await sandbox({ 'a.yaml': doc('a', '  results: x\n'), 'b.yaml': doc('b', '  results: x-y\n'), 'c.yaml': doc('c', '  results: xy/z\n') }).load();
    expect(r.errors).to.deep.equal([]);
  });
});
