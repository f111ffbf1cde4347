/**
 * Fixtures are never spec files: a repository used as a fixture (or a set's fromDir) may hold
 * YAML of its own, which is not read as specs; `.berthignore` leaves out more. The answer does
 * not depend on the order files are read, and a folder kept loaded (the controller's) agrees.
 */
import { expect } from 'chai';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { diskCachePath } from '../../../src/spec/disk-cache';
import { clearSpecFileCache } from '../../../src/spec/file-cache';
import path from 'node:path';
import { FolderLoad } from '../../../src/spec/folder-load';
import { loadPaths, loadSpecs } from '../../../src/spec/loader';
import { runValidate } from '../../../src/cli/commands/validate';
import { cleanupTemp, doc, sandbox, writeTree } from './helpers';

/** A repository's own YAML: none of it is a spec. */
const REPO = {
  'repo/mkdocs.yml': 'site_name: lib\nnav: [index.md]\n',
  'repo/.github/workflows/ci.yml': 'on: push\njobs: {t: {runs-on: ubuntu-latest}}\n',
  'repo/docker-compose.yml': 'services:\n  db:\n    image: postgres\n',
  'repo/docs/broken.yaml': 'a: [\n',
  'repo/k8s/deploy.yaml': 'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a}\n',
  'repo/src/lib.py': 'print(1)\n',
};

describe('spec: fixtures and fromDir folders are not scanned for specs; .berthignore', () => {
  afterEach(cleanupTemp);

  it('a repository with mkdocs.yml, CI workflows and docker-compose.yml serves as a fixture: the load is valid', async () => {
    const sb = sandbox({ ...REPO, 'a.yaml': doc('a', '  fixture: ./repo\n') });
    const r = await sb.load();
    expect(r.errors).to.deep.equal([]);
    expect(r.specs.map((s) => s.spec.name)).to.deep.equal(['a']);
    expect(r.files.map((f) => path.basename(f))).to.deep.equal(['a.yaml']);
    // the repository is left out whole, unread: a fixture of a.yaml, found before the walk reached it
    expect((r.skipped ?? []).map((s) => [path.relative(sb.specs, s.file), s.file.endsWith('/')])).to.deep.equal([['repo', true]]);
    expect(r.skipped?.[0]?.reason).to.match(/^a fixture or fromDir of .*a\.yaml$/);
    // A revision of a git source loads through the same loader: the same answer.
    const g = await loadSpecs({ specsDir: sb.specs, resultsRoot: sb.results, revision: 'a'.repeat(40) });
    expect(g.errors).to.deep.equal([]);
    expect(g.specs.map((s) => s.spec.name)).to.deep.equal(['a']);
    expect(g.skipped).to.deep.equal(r.skipped);
  });

  it('a fixture found before the walk reaches it is never walked: a dangling link named like a spec there is no error, no file in it is read', async () => {
    const sb = sandbox({ ...REPO, 'a.yaml': doc('a', '  fixture: ./repo\n') });
    symlinkSync('./nowhere.yaml', path.join(sb.specs, 'repo', 'docs', 'dangling.yaml'));
    const r = await sb.load();
    expect(r.errors).to.deep.equal([]);
    expect(r.specs.map((s) => s.spec.name)).to.deep.equal(['a']);
    // the same folder without the claim: the walk goes in and finds the link broken (the test can fail)
    writeFileSync(path.join(sb.specs, 'a.yaml'), doc('a'));
    clearSpecFileCache();
    const open = await sb.load();
    expect(open.errors.map((e) => [path.relative(sb.specs, e.file), e.message])).to.deep.include([
      'repo/docs/dangling.yaml',
      'broken link: no such file or folder',
    ]);
  });

  it("another tool's YAML is kept on disk as it is kept in memory: a new process parses none of it", async () => {
    // claimed by a file deeper than the repository (found after the walk went past it): its YAML is read, and kept
    const sb = sandbox({ ...REPO, 'x/y/a.yaml': doc('a', '  fixture: ../../repo\n') });
    const state = path.join(sb.root, 'state');
    mkdirSync(state);
    const first = await loadSpecs({ specsDir: sb.specs, resultsRoot: sb.results, cacheIn: state });
    expect(first.errors).to.deep.equal([]);
    expect(first.specs.map((s) => s.spec.name)).to.deep.equal(['a']);
    clearSpecFileCache(); // a new process
    const cacheFile = diskCachePath(state, { specsRoot: sb.specs, resultsRoot: path.resolve(sb.results) });
    const kept = JSON.parse(readFileSync(cacheFile, 'utf8')) as { entries: Record<string, { outcome: { foreign?: boolean } }> };
    expect(Object.values(kept.entries).filter((e) => e.outcome.foreign).length).to.equal(4);
    const again = await loadSpecs({ specsDir: sb.specs, resultsRoot: sb.results, cacheIn: state });
    expect(again.skipped).to.deep.equal(first.skipped);
    expect(again.specs.map((s) => s.hash)).to.deep.equal(first.specs.map((s) => s.hash));
  });

  it('without the fixture, the same files are errors (the test can fail)', async () => {
    const sb = sandbox({ ...REPO, 'a.yaml': doc('a') });
    const r = await sb.load();
    expect(r.errors.map((e) => path.relative(sb.specs, e.file))).to.include.members(['repo/mkdocs.yml', 'repo/docker-compose.yml', 'repo/docs/broken.yaml']);
  });

  it('a set template fixture (templated or not), the grader fixture, fromDir and a list of layers all claim their folders', async () => {
    const set = `apiVersion: berth.dev/v1
kind: AttemptSet
metadata: {name: s}
spec:
  matrix:
    task: {fromDir: ./tasks}
  template:
    image: berth/busybox:local
    fixture: ./tasks/\${{ matrix.task }}
    grade:
      command: [sh, -c, 'true']
      fixture: ./hidden
`;
    const sb = sandbox({
      'set.yaml': set,
      'tasks/t1/mkdocs.yml': 'x: [\n',
      'tasks/t2/ci.yml': 'on: push\n',
      'hidden/compose.yml': 'services: {}\n',
      'layers.yaml': doc('l', '  fixture: ./base\n').replace('kind: Attempt', 'kind: Attempt'),
      'base/a.yml': 'x: 1\n',
    });
    const r = await sb.load();
    expect(r.errors).to.deep.equal([]);
    expect(r.specs.map((s) => s.spec.name).sort()).to.deep.equal(['l', 's-t1', 's-t2']);
    // each claimed folder left out whole: tasks/ (the fromDir, holding both templated fixtures), hidden/, base/
    expect((r.skipped ?? []).map((s) => path.relative(sb.specs, s.file))).to.deep.equal(['base', 'hidden', 'tasks']);
  });

  it('claims are those of every file found, a file never skipped by its own: the same whatever the order', async () => {
    // b's fixture holds a.yaml's folder and a's fixture holds b's: each leaves the other out.
    const sb = sandbox({ 'x/a.yaml': doc('a', '  fixture: ../y\n'), 'y/b.yaml': doc('b', '  fixture: ../x\n') });
    const r = await sb.load();
    expect(r.specs).to.deep.equal([]);
    expect((r.skipped ?? []).length).to.equal(2);
    // A fixture that is the specs folder itself is refused as before, and leaves nothing out.
    const whole = sandbox({ 'a.yaml': doc('a', '  fixture: .\n'), 'b.yaml': doc('b') });
    const w = await whole.load();
    expect(w.errors.map((e) => e.code)).to.deep.equal(['path-escape']);
    expect(w.specs.map((s) => s.spec.name)).to.deep.equal(['b']);
  });

  it('.berthignore (gitignore syntax) leaves out files and folders, negation included; a link as .berthignore is an error', async () => {
    const sb = sandbox({
      '.berthignore': '# comment\nvendor/\n*.draft.yaml\n!keep.draft.yaml\n',
      'vendor/x.yaml': 'junk: [\n',
      'a.draft.yaml': 'junk: [\n',
      'keep.draft.yaml': doc('k'),
      'a.yaml': doc('a'),
    });
    const r = await sb.load();
    expect(r.errors).to.deep.equal([]);
    expect(r.specs.map((s) => s.spec.name).sort()).to.deep.equal(['a', 'k']);
    expect((r.skipped ?? []).map((s) => [path.relative(sb.specs, s.file), s.reason])).to.deep.equal([
      ['a.draft.yaml', 'matched by .berthignore'],
      ['vendor', 'matched by .berthignore'],
    ]);
    expect((r.skipped ?? []).find((s) => s.file.includes('vendor'))?.file.endsWith('vendor/')).to.equal(true);
    // folders given on the command line read their .berthignore too
    const p = await loadPaths([sb.specs], { resultsRoot: sb.results });
    expect(p.specs.map((s) => s.spec.name).sort()).to.deep.equal(['a', 'k']);
  });

  it('validate -v names what it skipped and why; without -v it does not', async () => {
    const sb = sandbox({ ...REPO, '.berthignore': 'drafts/\n', 'drafts/d.yaml': 'x', 'a.yaml': doc('a', '  fixture: ./repo\n') });
    const out: string[] = [];
    const io = { out: (s: string) => out.push(s), err: (s: string) => out.push(s) };
    expect(await runValidate([sb.specs], { output: 'text', resultsRoot: sb.results, verbose: true }, io)).to.equal(0);
    const text = out.join('');
    expect(text).to.match(/skipped .*drafts\/: matched by \.berthignore/);
    expect(text).to.match(/skipped .*repo\/: a fixture or fromDir of .*a\.yaml/);
    out.length = 0;
    expect(await runValidate([sb.specs], { output: 'text', resultsRoot: sb.results }, io)).to.equal(0);
    expect(out.join('')).not.to.match(/skipped/);
  });

  it('a folder kept loaded agrees with a full load, and an edit inside the fixture reads one file, without a walk', async () => {
    const sb = sandbox({ ...REPO, 'a.yaml': doc('a', '  fixture: ./repo\n') });
    const fl = new FolderLoad({ specsDir: sb.specs, resultsRoot: sb.results });
    const first = await fl.full();
    expect(first.errors).to.deep.equal([]);
    expect(fl.claims(path.join(sb.specs, 'repo', 'docs'))).to.equal(true);
    expect(fl.claims(path.join(sb.specs, 'other'))).to.equal(false);
    writeFileSync(path.join(sb.specs, 'repo', 'mkdocs.yml'), 'site_name: [\n');
    const walks = fl.walks;
    const got = await fl.update([path.join(sb.specs, 'repo', 'mkdocs.yml')]);
    expect(fl.walks).to.equal(walks);
    expect(got.errors).to.deep.equal([]);
    expect(got.specs[0]?.hash).not.to.equal(first.specs[0]?.hash); // the fixture changed
    // The claim goes: the folder is walked again and the repository's YAML is read as specs.
    writeFileSync(path.join(sb.specs, 'a.yaml'), doc('a'));
    const after = await fl.update([path.join(sb.specs, 'a.yaml')]);
    expect(fl.walks).to.equal(walks + 1);
    expect(after.errors.length).to.be.greaterThan(0);
    expect(after.errors.map((e) => e.file)).to.deep.equal((await sb.load()).errors.map((e) => e.file));
    // .berthignore changed: a walk
    writeTree(sb.specs, { '.berthignore': 'repo/\n' });
    const ignored = await fl.update([path.join(sb.specs, '.berthignore')]);
    expect(fl.walks).to.equal(walks + 2);
    expect(ignored.errors).to.deep.equal([]);
  });
});
