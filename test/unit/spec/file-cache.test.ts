/** The spec file cache: unchanged files are not parsed again, and a change is always seen. */
import { expect } from 'chai';
import { readFileSync, realpathSync, renameSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { DEFAULTS } from '../../../src/constants';
import { readSigned, signature } from '../../../src/spec/file-cache';
import { cleanupTemp, doc, sandbox, tempDir, writeTree } from './helpers';

describe('spec/file-cache', () => {
  afterEach(cleanupTemp);

  it('readSigned gives the signature a stat gives and the very bytes, from one open; nothing for a file that is not there', () => {
    const dir = tempDir();
    const file = path.join(dir, 'a.yaml');
    const bytes = Buffer.concat([Buffer.from(doc('a', '  command: [echo, one]\n')), Buffer.from([0xff, 0x00, 0xfe])]);
    writeFileSync(file, bytes);
    const r = readSigned(file);
    expect(r?.sig).to.equal(signature(file));
    expect(r?.bytes.equals(readFileSync(file))).to.equal(true);
    writeFileSync(file, '');
    expect(readSigned(file)?.bytes.length).to.equal(0);
    expect(readSigned(file)?.sig).to.equal(signature(file));
    expect(readSigned(path.join(dir, 'gone.yaml'))).to.equal(undefined);
    expect(readSigned(dir)).to.equal(undefined); // a folder: not read as a file
    // a FIFO in its place is not waited on; a file larger than a spec may be is not read
    execFileSync('mkfifo', [path.join(dir, 'fifo.yaml')]);
    expect(readSigned(path.join(dir, 'fifo.yaml'))).to.equal(undefined);
    writeFileSync(file, Buffer.alloc(DEFAULTS.maxSpecFileBytes + 1, 0x61));
    expect(readSigned(file)).to.equal(undefined);
  });

  it('serves an unchanged file from the cache and sees every edit', async () => {
    const sb = sandbox({ 'a.yaml': doc('a', '  command: [echo, one]\n') });
    const first = await sb.load();
    const again = await sb.load();
    expect(again.specs[0]).to.equal(first.specs[0]); // the same object: not parsed again
    writeFileSync(path.join(sb.specs, 'a.yaml'), doc('a', '  command: [echo, two]\n'));
    const edited = await sb.load();
    expect(edited.specs[0]?.spec.command).to.deep.equal(['echo', 'two']);
    expect(edited.specs[0]?.hash).to.not.equal(first.specs[0]?.hash);
  });

  it('keeps a spec with a fixture only while the fixture holds: an edit, a removal or another folder behind its path is seen', async () => {
    const sb = sandbox({ 'a.yaml': doc('a', '  fixture: ./fx\n'), 'b.yaml': doc('b', '  fixture: ./fx\n'), 'fx/in.txt': 'one', 'other/in.txt': 'other' });
    const first = await sb.load();
    const again = await sb.load();
    expect(again.specs[0]).to.equal(first.specs[0]); // the same object: not parsed again
    expect(again.specs[1]).to.equal(first.specs[1]);
    writeFileSync(path.join(sb.specs, 'fx', 'in.txt'), 'two');
    const edited = await sb.load();
    expect(edited.specs[0]?.hash).to.not.equal(first.specs[0]?.hash);
    expect(edited.specs[0]?.spec.fixtureDigest).to.not.equal(first.specs[0]?.spec.fixtureDigest);
    // the same path now a link to another folder inside the specs folder: its real path and digest
    renameSync(path.join(sb.specs, 'fx'), path.join(sb.specs, 'fx-old'));
    symlinkSync('other', path.join(sb.specs, 'fx'));
    const linked = await sb.load();
    expect(linked.specs[0]?.spec.fixture).to.equal(path.join(realpathSync(sb.specs), 'other'));
    // gone: the error a full parse gives, for both files
    unlinkSync(path.join(sb.specs, 'fx'));
    const gone = await sb.load();
    expect(gone.specs).to.deep.equal([]);
    expect(gone.errors.map((e) => [e.file.endsWith('a.yaml') || e.file.endsWith('b.yaml'), e.code])).to.deep.equal([
      [true, 'missing-file'],
      [true, 'missing-file'],
    ]);
  });

  it('never keeps a file with errors', async () => {
    const sb = sandbox({ 'a.yaml': doc('a', '  fixture: ./missing\n') });
    expect((await sb.load()).errors.map((e) => e.code)).to.deep.equal(['missing-file']);
    writeTree(sb.specs, { 'missing/x': 'x' });
    expect((await sb.load()).errors).to.deep.equal([]);
  });

  const setDoc = (matrix: string) => `apiVersion: berth.dev/v1
kind: AttemptSet
metadata: {name: s}
spec:
  matrix: {${matrix}}
  template: {image: berth/busybox:local, command: [echo, '\${{ matrix.x }}']}
`;

  it('keeps an AttemptSet whose children depend on the file alone, never one with a fromDir axis', async () => {
    const plain = sandbox({ 'a.yaml': setDoc('x: [a, b]') });
    const first = await plain.load();
    expect((await plain.load()).specs[0]).to.equal(first.specs[0]);

    const dir = sandbox({ 'a.yaml': setDoc('x: {fromDir: ./tasks}'), 'tasks/a/f': 'a' });
    expect((await dir.load()).specs.map((s) => s.spec.name)).to.deep.equal(['s-a']);
    writeTree(dir.specs, { 'tasks/b/f': 'b' });
    expect((await dir.load()).specs.map((s) => s.spec.name)).to.deep.equal(['s-a', 's-b']);
  });
});

describe('spec/file-cache: specFilesParsed (the launcher makes no code cache of a run that parsed, issue 55)', function () {
  this.timeout(60_000);
  afterEach(cleanupTemp);

  it('is false until a spec file is parsed, then true; a load answered from the caches parses none', () => {
    const sb = sandbox({ 'a.yaml': doc('a') });
    const state = tempDir();
    const repo = path.resolve(__dirname, '..', '..', '..');
    // each process loads the folder twice, reporting specFilesParsed() before and after each load
    const script = `
const { specFilesParsed } = require(${JSON.stringify(path.join(repo, 'src', 'spec', 'file-cache.ts'))});
const { loadSpecs } = require(${JSON.stringify(path.join(repo, 'src', 'spec', 'loader.ts'))});
(async () => {
  const seen = [specFilesParsed()];
  await loadSpecs({ specsDir: ${JSON.stringify(sb.specs)}, resultsRoot: ${JSON.stringify(sb.results)}, cacheIn: ${JSON.stringify(state)} });
  seen.push(specFilesParsed());
  process.stdout.write(JSON.stringify(seen));
})();`;
    const run = () => JSON.parse(execFileSync(process.execPath, ['--require', require.resolve('tsx/cjs'), '-e', script], { encoding: 'utf8' })) as boolean[];
    expect(run(), 'the first process parses a.yaml').to.deep.equal([false, true]);
    expect(run(), 'the next one takes it from the disk cache').to.deep.equal([false, false]);
    writeFileSync(path.join(sb.specs, 'a.yaml'), doc('a', '  command: [echo, changed]\n'));
    expect(run(), 'an edited file is parsed').to.deep.equal([false, true]);
  });
});
