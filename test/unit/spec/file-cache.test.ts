/** The spec file cache: unchanged files are not parsed again, and a change is always seen. */
import { expect } from 'chai';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { cleanupTemp, doc, sandbox, writeTree } from './helpers';

describe('spec/file-cache', () => {
  afterEach(cleanupTemp);

  it('serves an unchanged file from the cache and sees every edit', async () => {
    const sb = sandbox({ 'a.yaml': doc('a', "  command: [echo, one]\n") });
    const first = await sb.load();
    const again = await sb.load();
    expect(again.specs[0]).to.equal(first.specs[0]); // the same object: not parsed again
    writeFileSync(path.join(sb.specs, 'a.yaml'), doc('a', "  command: [echo, two]\n"));
    const edited = await sb.load();
    expect(edited.specs[0]?.spec.command).to.deep.equal(['echo', 'two']);
    expect(edited.specs[0]?.hash).to.not.equal(first.specs[0]?.hash);
  });

  it('never keeps a spec whose fixture can change under it', async () => {
    const sb = sandbox({ 'a.yaml': doc('a', '  fixture: ./fx\n'), 'fx/in.txt': 'one' });
    const first = await sb.load();
    writeFileSync(path.join(sb.specs, 'fx', 'in.txt'), 'two');
    const second = await sb.load();
    expect(second.specs[0]?.hash).to.not.equal(first.specs[0]?.hash);
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
