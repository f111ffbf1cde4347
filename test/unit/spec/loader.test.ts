/** loadSpecs / loadPaths: finding files, several documents, isolation between files, names. */
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import fs, { symlinkSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { DEFAULTS } from '../../../src/constants';
import { loadPaths, loadSpecs } from '../../../src/spec/loader';
import { GOOD, cleanupTemp, doc, loadOne, sandbox, tempDir } from './helpers';

describe('spec/loader', () => {
  afterEach(cleanupTemp);

  it('loads the good fixtures: every document of every file, in file order', async () => {
    const r = await loadSpecs({ specsDir: GOOD, resultsRoot: tempDir() });
    expect(r.errors).to.deep.equal([]);
    expect(r.specs.map((s) => s.spec.name)).to.deep.equal(['good-full', 'good-minimal', 'good-multi-a', 'good-multi-b']);
    expect(r.files.map((f) => path.basename(f))).to.deep.equal(['full.yaml', 'minimal.yaml', 'multi.yaml']);
    expect(r.documents).to.equal(4);
    expect(r.protectedNames.size).to.equal(0);
    expect(r.unreadableFiles.size).to.equal(0);
    const full = r.specs[0];
    expect(full?.relFile).to.equal('full.yaml');
    expect(full?.source).to.include({ line: 6, col: 9 });
    expect(full?.hash).to.match(/^[0-9a-f]{64}$/);
  });

  it('walks folders recursively in sorted order and skips dot-files, dot-folders and editor leftovers', async () => {
    const sb = sandbox({
      'b.yaml': doc('b'),
      'a.yml': doc('a'),
      'sub/c.yaml': doc('c'),
      'sub/deeper/d.yaml': doc('d'),
      '.hidden.yaml': doc('hidden-file'),
      '.git/x.yaml': doc('in-dot-folder'),
      'e.yaml~': doc('backup'),
      '#e.yaml#': doc('emacs-autosave'),
      '.#e.yaml': doc('emacs-lock'),
      'e.yaml.swp': 'binary junk',
      '4913': 'vim write test',
      'notes.txt': 'not a spec',
      'data.json': '{}',
    });
    const r = await sb.load();
    expect(r.errors).to.deep.equal([]);
    expect(r.specs.map((s) => s.relFile)).to.deep.equal(['a.yml', 'b.yaml', 'sub/c.yaml', 'sub/deeper/d.yaml']);
  });

  it('follows a linked folder inside the specs folder once, never one that leads outside', async () => {
    const outside = tempDir();
    writeFileSync(path.join(outside, 'evil.yaml'), doc('outside'));
    const sb = sandbox({ 'real/x.yaml': doc('x') });
    symlinkSync(path.join(sb.specs, 'real'), path.join(sb.specs, 'alias'));
    symlinkSync(outside, path.join(sb.specs, 'out'));
    symlinkSync(sb.specs, path.join(sb.specs, 'real', 'loop'));
    const r = await sb.load();
    expect(r.errors).to.deep.equal([]);
    expect(r.specs.map((s) => s.relFile)).to.deep.equal(['real/x.yaml']);
  });

  it('refuses a linked spec file that resolves outside the specs folder', async () => {
    const outside = tempDir();
    writeFileSync(path.join(outside, 'evil.yaml'), doc('outside'));
    const sb = sandbox({ 'ok.yaml': doc('ok') });
    symlinkSync(path.join(outside, 'evil.yaml'), path.join(sb.specs, 'evil.yaml'));
    symlinkSync(path.join(sb.specs, 'ok.yaml'), path.join(sb.specs, 'same.yaml'));
    const r = await sb.load();
    expect(r.specs.map((s) => s.spec.name)).to.deep.equal(['ok']);
    expect(r.errors).to.have.length(1);
    expect(r.errors[0]).to.include({ code: 'path-escape' });
    expect(r.unreadableFiles.has('evil.yaml')).to.equal(true);
  });

  it("one bad file never hides another file's errors nor stops valid files from loading", async () => {
    const sb = sandbox({
      'a-syntax.yaml': `${doc('broken-a')}  command: [sh\n`,
      'b-schema.yaml': doc('broken-b', '  retries: -1\n'),
      'c-ok.yaml': doc('fine'),
      'd-encoding.yaml': Buffer.from([0x61, 0x3a, 0x20, 0xff, 0x0a]),
    });
    const r = await sb.load();
    expect(r.specs.map((s) => s.spec.name)).to.deep.equal(['fine']);
    expect(r.errors.map((e) => [path.basename(e.file), e.code])).to.deep.equal([
      ['a-syntax.yaml', 'yaml-syntax'],
      ['b-schema.yaml', 'schema'],
      ['d-encoding.yaml', 'encoding'],
    ]);
    expect([...r.unreadableFiles].sort()).to.deep.equal(['a-syntax.yaml', 'd-encoding.yaml']);
    expect([...r.protectedNames].sort()).to.deep.equal(['broken-a', 'broken-b']);
    expect(r.documents).to.equal(2);
  });

  it('reports a duplicate name at every place, naming the others, and loads none of them', async () => {
    const sb = sandbox({
      'one.yaml': doc('twin'),
      'two.yaml': `${doc('other')}---\n${doc('twin', '  retries: 1\n')}`,
      'three.yaml': doc('twin', '  retries: -5\n'),
    });
    const r = await sb.load();
    expect(r.specs.map((s) => s.spec.name)).to.deep.equal(['other']);
    const dups = r.errors.filter((e) => e.code === 'duplicate-name');
    expect(dups.map((e) => [path.basename(e.file), e.line, e.path])).to.deep.equal([
      ['one.yaml', 4, 'metadata.name'],
      ['three.yaml', 4, 'metadata.name'],
      ['two.yaml', 11, 'metadata.name'],
    ]);
    for (const e of dups) {
      const others = dups.filter((o) => o !== e).map((o) => `${o.file}:${o.line}:${o.col}`);
      for (const o of others) expect(e.message).to.include(o);
    }
    expect(r.errors.some((e) => e.code === 'schema' && e.path === 'spec.retries')).to.equal(true);
    expect([...r.protectedNames]).to.deep.equal(['twin']);
  });

  it('skips empty and comment-only files and documents', async () => {
    const r = await sandbox({ 'empty.yaml': '', 'comment.yaml': '# nothing here\n', 'docs.yaml': `---\n---\n${doc('x')}---\n` }).load();
    expect(r.errors).to.deep.equal([]);
    expect(r.specs.map((s) => s.spec.name)).to.deep.equal(['x']);
    expect(r.documents).to.equal(1);
  });

  it('refuses a file over the size cap as too-large at 1:1, without parsing it', async () => {
    const big = `${doc('big')}# ${'x'.repeat(DEFAULTS.maxSpecFileBytes)}\n`;
    const r = await loadOne(big);
    expect(r.errors).to.have.length(1);
    expect(r.errors[0]).to.include({ code: 'too-large', line: 1, col: 1 });
    expect(r.unreadableFiles.has('spec.yaml')).to.equal(true);
  });

  it('reports a missing specs folder as an io error instead of throwing', async () => {
    const r = await loadSpecs({ specsDir: path.join(tempDir(), 'nope'), resultsRoot: tempDir() });
    expect(r.specs).to.deep.equal([]);
    expect(r.errors).to.have.length(1);
    expect(r.errors[0]?.code).to.equal('io');
  });

  it('walks a folder named *.yaml as a folder, and never opens a fifo named *.yaml', async () => {
    const sb = sandbox({ 'ok.yaml': doc('ok'), 'dir.yaml/inner.yaml': doc('inner') });
    execFileSync('mkfifo', [path.join(sb.specs, 'pipe.yaml')]);
    const r = await sb.load();
    expect(r.specs.map((s) => s.relFile)).to.deep.equal(['dir.yaml/inner.yaml', 'ok.yaml']);
    expect(r.errors.map((e) => [path.basename(e.file), e.code, e.message])).to.deep.equal([['pipe.yaml', 'io', 'not a regular file']]);
  });

  it('walks a fixture many specs share once per load, and each load walks it again (an edit between loads is seen)', async () => {
    const files: Record<string, string> = { 'fx/a.txt': 'a', 'fx/b.txt': 'b' };
    for (let i = 0; i < 10; i++) files[`s${i}.yaml`] = doc(`s${i}`, '  fixture: ./fx\n');
    const sb = sandbox(files);
    const fx = path.join(sb.specs, 'fx');
    // The walk uses lstatSync (util/tree-walk.ts): by path for a fingerprint, inside its folder's
    // descriptor (/proc/self/fd/N/a.txt) for a scan; counted on the module object it calls.
    const fsMod = fs as unknown as { lstatSync: (...a: unknown[]) => unknown };
    const real = fsMod.lstatSync;
    let walked = 0;
    fsMod.lstatSync = (p: unknown, ...rest: unknown[]) => {
      if (String(p) === path.join(fx, 'a.txt') || /^\/proc\/self\/fd\/\d+\/a\.txt$/.test(String(p))) walked++;
      return real(p, ...rest);
    };
    try {
      const r = await loadSpecs({ specsDir: sb.specs, resultsRoot: sb.results });
      expect(r.errors).to.deep.equal([]);
      expect(new Set(r.specs.map((s) => s.hash)).size).to.equal(10);
      expect(walked).to.equal(1);
      writeFileSync(path.join(fx, 'a.txt'), 'changed');
      const again = await loadSpecs({ specsDir: sb.specs, resultsRoot: sb.results });
      // once to find the tree changed since its digest was kept, once to scan it
      expect(walked).to.equal(3);
      expect(again.specs.map((s) => s.hash)).to.not.include.members(r.specs.map((s) => s.hash));
    } finally {
      fsMod.lstatSync = real;
    }
  });

  describe('loadPaths', () => {
    it('treats a single file as living in its own folder', async () => {
      const sb = sandbox({ 'sub/one.yaml': doc('one', '  fixture: ./fx\n'), 'sub/fx/a.txt': 'a' });
      const r = await loadPaths([path.join(sb.specs, 'sub', 'one.yaml')], { resultsRoot: sb.results });
      expect(r.errors).to.deep.equal([]);
      expect(r.specs[0]?.relFile).to.equal('one.yaml');
      expect(r.specs[0]?.spec.fixture).to.equal(path.join(sb.specs, 'sub', 'fx'));
    });

    it('loads folders and files together, each file once, and reports paths that do not exist', async () => {
      const sb = sandbox({ 'a.yaml': doc('a'), 'b.yaml': doc('b') });
      const missing = path.join(sb.root, 'missing.yaml');
      const r = await loadPaths([sb.specs, path.join(sb.specs, 'a.yaml'), missing], { resultsRoot: sb.results });
      expect(r.specs.map((s) => s.spec.name)).to.deep.equal(['a', 'b']);
      expect(r.errors).to.have.length(1);
      expect(r.errors[0]).to.include({ code: 'io', line: 1, col: 1 });
      expect(r.errors[0]?.message).to.match(/no such file/);
    });

    it('refuses a named fifo without blocking on it', async () => {
      const sb = sandbox({});
      const fifo = path.join(sb.specs, 'pipe.yaml');
      execFileSync('mkfifo', [fifo]);
      const r = await loadPaths([fifo], { resultsRoot: sb.results });
      expect(r.errors.map((e) => [e.code, e.message])).to.deep.equal([['io', 'not a regular file']]);
    });

    it('checks names across all given paths', async () => {
      const a = sandbox({ 'x.yaml': doc('same') });
      const b = sandbox({ 'y.yaml': doc('same') });
      const r = await loadPaths([a.specs, b.specs], { resultsRoot: a.results });
      expect(r.specs).to.deep.equal([]);
      expect(r.errors.filter((e) => e.code === 'duplicate-name')).to.have.length(2);
    });
  });
});
