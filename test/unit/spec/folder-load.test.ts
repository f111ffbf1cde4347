/**
 * The specs folder kept loaded (spec/folder-load.ts): after a change only the named files are
 * read again, and every update equals a full load of the folder as it is then, including the
 * checks across files (a name or results folder clashing with an unchanged file's).
 */
import { expect } from 'chai';
import { renameSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { changedNames } from '../../../src/controller/spec-source';
import { FolderLoad } from '../../../src/spec/folder-load';
import type { LoadReport } from '../../../src/spec/loader';
import { cleanupTemp, doc, loadSummary, sandbox, writeTree, type Sandbox } from './helpers';

const summary = loadSummary;

describe('spec/folder-load: a folder loaded again file by file', () => {
  afterEach(cleanupTemp);

  let sb: Sandbox;
  let fl: FolderLoad;
  /** Whether the last `update` walked the whole folder. */
  let walked = 0;
  /** The last load `update` answered. */
  let last: LoadReport;
  const at = (rel: string) => path.join(sb.specs, rel);
  /** Updates after `paths` changed, and checks the result against a full load of the folder now. */
  const update = async (...rels: string[]): Promise<LoadReport> => {
    const walks = fl.walks;
    const got = await fl.update(rels.map(at));
    walked = fl.walks - walks;
    expect(summary(got)).to.deep.equal(summary(await sb.load()));
    // The names it says a change can touch hold every name that changed.
    if (fl.touched) expect(changedNames(last, got, fl.touched)).to.deep.equal(changedNames(last, got));
    last = got;
    return got;
  };
  const hashOf = (l: LoadReport, name: string) => l.specs.find((s) => s.spec.name === name)?.hash;

  beforeEach(async () => {
    sb = sandbox({ 'a.yaml': doc('a'), 'b.yaml': doc('b'), 'sub/c.yaml': doc('c'), 'README.md': 'not a spec' });
    fl = new FolderLoad({ specsDir: sb.specs, resultsRoot: sb.results });
    last = await fl.full();
    expect(summary(last)).to.deep.equal(summary(await sb.load()));
  });

  it('reads only the files named: an edit it is not told of is not seen, one it is told of is', async () => {
    const first = await sb.load();
    writeFileSync(at('a.yaml'), doc('a', '  command: [echo, unseen]\n'));
    writeFileSync(at('b.yaml'), doc('b', '  command: [echo, seen]\n'));
    const got = await fl.update([at('b.yaml')]);
    expect(fl.touched && [...fl.touched].sort()).to.deep.equal(['b']);
    expect(hashOf(got, 'a')).to.equal(hashOf(first, 'a'));
    expect(hashOf(got, 'b')).to.not.equal(hashOf(first, 'b'));
    expect(got.specs.find((s) => s.spec.name === 'b')?.spec.command).to.deep.equal(['echo', 'seen']);
  });

  it('an edit, an add, a delete and a rename', async () => {
    const before = await sb.load();
    writeFileSync(at('a.yaml'), doc('a', '  command: [echo, two]\n'));
    expect(hashOf(await update('a.yaml'), 'a')).to.not.equal(hashOf(before, 'a'));
    writeTree(sb.specs, { 'sub/d.yaml': doc('d') });
    expect((await update('sub/d.yaml')).specs.map((s) => s.spec.name)).to.include('d');
    unlinkSync(at('b.yaml'));
    expect((await update('b.yaml')).specs.map((s) => s.spec.name)).to.not.include('b');
    renameSync(at('sub/c.yaml'), at('0c.yaml'));
    const renamed = await update('sub/c.yaml', '0c.yaml');
    expect(walked).to.equal(0);
    expect(renamed.files[0]).to.match(/0c\.yaml$/);
    expect(hashOf(renamed, 'c')).to.equal(hashOf(before, 'c'));
  });

  it('a change that makes a name clash with an unchanged file protects both, and undoing it frees both', async () => {
    writeFileSync(at('b.yaml'), doc('a'));
    const clash = await update('b.yaml');
    expect(walked).to.equal(0);
    expect(clash.specs.map((s) => s.spec.name)).to.not.include('a');
    expect(clash.protectedNames.has('a')).to.equal(true);
    // The unchanged file carries an error too.
    expect(clash.errors.filter((e) => e.code === 'duplicate-name').map((e) => path.basename(e.file))).to.deep.equal(['a.yaml', 'b.yaml']);
    writeFileSync(at('b.yaml'), doc('b'));
    const freed = await update('b.yaml');
    expect(walked).to.equal(0);
    expect(freed.errors).to.deep.equal([]);
    expect(freed.specs.map((s) => s.spec.name).sort()).to.deep.equal(['a', 'b', 'c']);
  });

  it("a results folder made to overlap an unchanged attempt's refuses both", async () => {
    writeFileSync(at('b.yaml'), doc('b', '  results: a/inner\n'));
    const got = await update('b.yaml');
    expect(walked).to.equal(0);
    expect(got.errors.map((e) => `${e.code}:${e.attempt}`).sort()).to.deep.equal(['results-overlap:a', 'results-overlap:b']);
  });

  it("AttemptSets: a child clashing with an unchanged file's attempt, a second set of the same name, and a set changed", async () => {
    const setDoc = (matrix: string) => `apiVersion: berth.dev/v1
kind: AttemptSet
metadata: {name: s}
spec:
  matrix: {${matrix}}
  template: {image: berth/busybox:local, command: [echo, '\${{ matrix.x }}']}
`;
    writeTree(sb.specs, { 'set.yaml': setDoc('x: [p, q]') });
    expect((await update('set.yaml')).specs.map((s) => s.spec.name)).to.include.members(['s-p', 's-q']);
    writeFileSync(at('a.yaml'), doc('s-p'));
    const clash = await update('a.yaml');
    expect(clash.protectedNames.has('s-p')).to.equal(true);
    writeTree(sb.specs, { 'set2.yaml': setDoc('x: [r]') });
    const twice = await update('set2.yaml');
    expect(twice.specs.map((s) => s.spec.name)).to.not.include.members(['s-q', 's-r']);
    unlinkSync(at('set2.yaml'));
    writeFileSync(at('set.yaml'), setDoc('x: [q, t]'));
    const changed = await update('set2.yaml', 'set.yaml');
    expect(changed.specs.map((s) => s.spec.name)).to.include.members(['s-q', 's-t']);
    expect(walked).to.equal(0);
  });

  it('a file with a fixture is read again at every update (its fixture may have changed)', async () => {
    writeTree(sb.specs, { 'f.yaml': doc('f', '  fixture: ./fx\n'), 'fx/in.txt': 'one' });
    // A new folder: only a walk can place it.
    const first = await update('fx', 'fx/in.txt', 'f.yaml');
    writeFileSync(at('fx/in.txt'), 'two');
    const second = await update('fx/in.txt');
    expect(walked).to.equal(0);
    expect(hashOf(second, 'f')).to.not.equal(hashOf(first, 'f'));
  });

  it('paths it cannot place load everything: a new folder, a link, a removed folder', async () => {
    writeTree(sb.specs, { 'new/e.yaml': doc('e') });
    expect((await update('new/e.yaml')).specs.map((s) => s.spec.name)).to.include('e');
    expect(walked).to.equal(1);
    writeTree(sb.specs, { 'x/g.yaml': doc('g') });
    expect((await update('x')).specs.map((s) => s.spec.name)).to.include('g');
    expect(walked).to.equal(1);
    // A file it is told of anywhere while the folder holds a link: the walk decides.
    const { symlinkSync, rmSync } = await import('node:fs');
    symlinkSync(at('a.yaml'), at('link.yaml'));
    await update('link.yaml');
    writeFileSync(at('b.yaml'), doc('b', '  command: [echo, three]\n'));
    await update('b.yaml');
    expect(walked).to.equal(1);
    rmSync(at('x'), { recursive: true });
    unlinkSync(at('link.yaml'));
    expect((await update('x', 'link.yaml')).specs.map((s) => s.spec.name)).to.not.include('g');
    writeFileSync(at('b.yaml'), doc('b', '  command: [echo, four]\n'));
    await update('b.yaml');
    expect(walked).to.equal(0); // no link left: file by file again
  });

  it('ignores what the walk never reads: other files, editor leftovers, dot-files', async () => {
    writeFileSync(at('README.md'), 'changed');
    writeFileSync(at('a.yaml~'), doc('zz'));
    writeFileSync(at('.hidden.yaml'), doc('zz'));
    expect((await update('README.md', 'a.yaml~', '.hidden.yaml')).specs.map((s) => s.spec.name).sort()).to.deep.equal(['a', 'b', 'c']);
    expect(walked).to.equal(0);
  });

  it('a spec file made unreadable and then readable again', async () => {
    writeFileSync(at('a.yaml'), 'metadata: [unclosed\n');
    const bad = await update('a.yaml');
    expect(walked).to.equal(0);
    expect(bad.unreadableFiles.has('a.yaml')).to.equal(true);
    writeFileSync(at('a.yaml'), doc('a'));
    expect((await update('a.yaml')).errors).to.deep.equal([]);
  });
  it('a few plain files among clean ones: the load is made from the one before (quick-update.ts), equal to a full load; anything else combines everything', async () => {
    const quick = () => fl.updates.quick;
    writeTree(sb.specs, { 'sub/d.yaml': doc('d'), 'e.yaml': doc('e') });
    await update('sub/d.yaml', 'e.yaml');
    writeFileSync(at('a.yaml'), doc('a', '  command: [echo, edited]\n'));
    await update('a.yaml');
    unlinkSync(at('b.yaml'));
    await update('b.yaml');
    renameSync(at('e.yaml'), at('0e.yaml'));
    await update('e.yaml', '0e.yaml');
    expect(quick()).to.equal(4);
    // a name declared elsewhere, a results folder held by another: not quick, and right
    writeFileSync(at('z.yaml'), doc('a'));
    await update('z.yaml');
    expect(quick()).to.equal(4);
    writeFileSync(at('z.yaml'), doc('z'));
    await update('z.yaml');
    expect(quick()).to.equal(4); // the load before was not clean
    writeFileSync(at('y.yaml'), doc('y', '  results: z\n'));
    const clash = await update('y.yaml');
    expect(clash.errors.map((e) => e.code)).to.include('results-overlap');
    writeFileSync(at('y.yaml'), doc('y', '  results: ./elsewhere/y\n'));
    await update('y.yaml');
    unlinkSync(at('y.yaml'));
    await update('y.yaml');
    // two files declaring one new name at once
    writeTree(sb.specs, { 'n1.yaml': doc('n'), 'n2.yaml': doc('n') });
    expect((await update('n1.yaml', 'n2.yaml')).protectedNames.has('n')).to.equal(true);
    unlinkSync(at('n2.yaml'));
    await update('n2.yaml');
    const before = quick();
    writeTree(sb.specs, { 'm.yaml': doc('m') + '---\n' + doc('m2') });
    const two = await update('m.yaml');
    expect(quick()).to.equal(before + 1);
    expect(two.documents).to.equal((await sb.load()).documents);
    expect(walked).to.equal(0);
  });

  it("quick updates beside an AttemptSet keep its children after the files' attempts, as a full load orders them", async () => {
    writeTree(sb.specs, {
      'set.yaml': `apiVersion: berth.dev/v1
kind: AttemptSet
metadata: {name: s}
spec:
  matrix: {x: [p, q]}
  template: {image: berth/busybox:local, command: [echo, '\${{ matrix.x }}']}
`,
    });
    await update('set.yaml');
    const q0 = fl.updates.quick;
    writeTree(sb.specs, { 'zz.yaml': doc('zz'), '00.yaml': doc('first') });
    const got = await update('zz.yaml', '00.yaml');
    expect(fl.updates.quick).to.equal(q0 + 1);
    expect(got.specs.map((s) => s.spec.name).slice(-2)).to.deep.equal(['s-p', 's-q']);
    unlinkSync(at('zz.yaml'));
    await update('zz.yaml');
    expect(fl.updates.quick).to.equal(q0 + 2);
  });
});
