/**
 * spec.fixture as a list of layers: each layer checked as a fixture is, normalized to its real
 * path and digest in order; one layer hashes as the plain string does; more hash their digests
 * in order. A set's children share a base layer (checked and walked once per load).
 */
import { expect } from 'chai';
import { symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { layersDigest } from '../../../src/spec/fixture-digest';
import { cleanupTemp, doc, sandbox } from './helpers';

describe('spec: fixture layers', () => {
  afterEach(cleanupTemp);

  const files = { 'base/src/m.py': 'print(1)\n', 'base/README': 'base\n', 'patch/README': 'patched\n', 'patch2/t.txt': 't\n' };

  it('a list of one layer is the plain fixture: same digest, same hash', async () => {
    const plain = await sandbox({ ...files, 's.yaml': doc('s', '  fixture: ./base\n') }).load();
    const listed = await sandbox({ ...files, 's.yaml': doc('s', '  fixture: [./base]\n') }).load();
    const [a, b] = [plain.specs[0], listed.specs[0]];
    expect(plain.errors).to.deep.equal([]);
    expect(listed.errors).to.deep.equal([]);
    expect(b?.spec.fixtureDigest).to.equal(a?.spec.fixtureDigest);
    expect(b?.hash).to.equal(a?.hash);
    expect(b?.spec.fixtureLayers).to.have.length(1);
  });

  it('more layers: real path and digest of each, in order; the digest covers the order; an edit of any layer changes the hash', async () => {
    const sb = sandbox({ ...files, 'a.yaml': doc('a', '  fixture: [./base, ./patch]\n'), 'b.yaml': doc('b', '  fixture: [./patch, ./base]\n') });
    const r = await sb.load();
    expect(r.errors).to.deep.equal([]);
    const [a, b] = ['a', 'b'].map((n) => r.specs.find((s) => s.spec.name === n)?.spec);
    expect(a?.fixture).to.equal(path.join(sb.specs, 'base'));
    expect(a?.fixtureLayers.map((l) => l.path)).to.deep.equal([path.join(sb.specs, 'base'), path.join(sb.specs, 'patch')]);
    expect(a?.fixtureDigest).to.equal(layersDigest(a?.fixtureLayers.map((l) => l.digest) ?? []));
    expect(a?.fixtureDigest).to.not.equal(b?.fixtureDigest);
    const hash = r.specs.find((s) => s.spec.name === 'a')?.hash;
    writeFileSync(path.join(sb.specs, 'patch', 'README'), 'patched again\n');
    const again = await sb.load();
    expect(again.specs.find((s) => s.spec.name === 'a')?.hash).to.not.equal(hash);
  });

  it('each layer follows every rule of a fixture, its errors placed at its index', async () => {
    const sb = sandbox({ ...files, 's.yaml': doc('s', '  fixture: [./base, ./nope, ./patch]\n') });
    symlinkSync('/etc/passwd', path.join(sb.specs, 'patch', 'out'));
    const r = await sb.load();
    expect(r.specs).to.deep.equal([]);
    expect(r.errors.map((e) => `${e.path} ${e.code}`)).to.deep.equal(['spec.fixture[1] missing-file', 'spec.fixture[2] fixture-link']);
    const empty = await sandbox({ 's.yaml': doc('s', '  fixture: []\n') }).load();
    expect(empty.errors.map((e) => e.code)).to.deep.equal(['schema']);
    const outside = await sandbox({ 's.yaml': doc('s', '  fixture: [../elsewhere]\n') }).load();
    expect(outside.errors.map((e) => `${e.path} ${e.code}`)).to.deep.equal(['spec.fixture[0] path-escape']);
  });

  it("a set's children share one base layer, each with its own layer over it", async () => {
    const set = `apiVersion: berth.dev/v1
kind: AttemptSet
metadata: {name: evals}
spec:
  matrix:
    task: {fromDir: ./tasks}
  template:
    image: berth/busybox:local
    fixture: [./repo, './tasks/\${{ matrix.task }}']
`;
    const sb = sandbox({ 'repo/lib.py': 'x = 1\n', 'tasks/t1/patch.txt': '1\n', 'tasks/t2/patch.txt': '2\n', 'set.yaml': set });
    const r = await sb.load();
    expect(r.errors).to.deep.equal([]);
    expect(r.specs.map((s) => s.spec.fixtureLayers.map((l) => path.relative(sb.specs, l.path)))).to.deep.equal([
      ['repo', 'tasks/t1'],
      ['repo', 'tasks/t2'],
    ]);
    const bases = new Set(r.specs.map((s) => s.spec.fixtureLayers[0]?.digest));
    expect(bases.size).to.equal(1);
    expect(r.specs[0]?.spec.fixtureDigest).to.not.equal(r.specs[1]?.spec.fixtureDigest);
  });
});
