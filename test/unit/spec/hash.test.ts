/** canonicalJson and the spec hash: what changes it, and what must not. */
import { expect } from 'chai';
import { renameSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { canonicalJson, specHash } from '../../../src/spec/hash';
import { loadSpecs } from '../../../src/spec/loader';
import { cleanupTemp, doc, loadOne, sandbox, tempDir } from './helpers';

async function hashOf(text: string, extra: Record<string, string> = {}): Promise<string> {
  const r = await loadOne(text, extra);
  expect(r.errors, text).to.deep.equal([]);
  return r.specs[0]?.hash ?? '';
}

describe('spec/hash', () => {
  afterEach(cleanupTemp);

  describe('canonicalJson', () => {
    it('sorts keys at every level and keeps array order', () => {
      expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } })).to.equal('{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}');
    });
    it('drops undefined members, writes undefined array items as null, escapes strings', () => {
      expect(canonicalJson({ a: undefined, b: [undefined], c: 'q"\n\u2028' })).to.equal('{"b":[null],"c":"q\\"\\n\u2028"}');
    });
    it('is independent of insertion order', () => {
      expect(canonicalJson({ x: 1, y: 2 })).to.equal(canonicalJson({ y: 2, x: 1 }));
    });
    it('refuses values JSON cannot carry', () => {
      expect(() => canonicalJson({ a: NaN })).to.throw(TypeError);
      expect(() => canonicalJson({ a: () => 1 })).to.throw(TypeError);
      const cyclic: Record<string, unknown> = {};
      cyclic.self = cyclic;
      expect(() => canonicalJson(cyclic)).to.throw(/cyclic/);
    });
    it('allows the same object twice when it is not a cycle', () => {
      const shared = { a: 1 };
      expect(canonicalJson([shared, shared])).to.equal('[{"a":1},{"a":1}]');
    });
  });

  describe('specHash', () => {
    it('is the sha256 of the normalized spec and stable (bump SPEC_HASH_SCHEMA when this changes)', async () => {
      const r = await loadOne(doc('golden'));
      const s = r.specs[0];
      expect(s?.hash).to.equal(specHash(s?.spec as never));
      expect(s?.hash).to.equal('b56ac5ec465fda1078e460bdc0abc979cd5804c87ac03f5ab7d962def860c8c6');
    });

    it('does not depend on key order, flow vs block style, or defaults written out', async () => {
      const base = await hashOf(doc('x', '  command: [echo, hi]\n'));
      const reordered = await hashOf(
        'spec:\n  command:\n    - echo\n    - hi\n  image: berth/busybox:local\nmetadata: {name: x}\nkind: Attempt\napiVersion: berth.dev/v1\n',
      );
      const explicit = await hashOf(
        doc(
          'x',
          `  command: [echo, hi]
  workingDir: /workspace
  results: x
  network: {mode: none, egress: []}
  resources: {pids: 512}
  retries: 0
  env: {}
  secrets: []
  volumes: []
`,
          '  labels: {}\n',
        ),
      );
      expect(reordered).to.equal(base);
      expect(explicit).to.equal(base);
    });

    it('ignores labels, retries and ttlSecondsAfterFinished', async () => {
      const base = await hashOf(doc('x'));
      expect(await hashOf(doc('x', '  retries: 3\n  ttlSecondsAfterFinished: 60\n', '  labels: {suite: a}\n'))).to.equal(base);
    });

    it('ignores the order of secrets, volumes and egress, and equal ways of writing memory', async () => {
      const a = await hashOf(
        doc(
          'x',
          '  secrets: [{name: a, fromEnv: A}, {name: b, fromEnv: B}]\n  volumes: [{name: v, mountPath: /v}, {name: w, mountPath: /w}]\n  network: {mode: isolated, egress: [a.b:1, c.d:2]}\n  resources: {memory: 1Gi}\n',
        ),
      );
      const b = await hashOf(
        doc(
          'x',
          '  secrets: [{name: b, fromEnv: B}, {name: a, fromEnv: A}]\n  volumes: [{name: w, mountPath: /w}, {name: v, mountPath: /v/}]\n  network: {mode: isolated, egress: [C.D:2, a.b:1]}\n  resources: {memory: 1073741824}\n',
        ),
      );
      expect(a).to.equal(b);
    });

    it('changes with anything that changes the run', async () => {
      const base = await hashOf(doc('x', '  command: [echo, hi]\n'));
      const variants = [
        doc('y', '  command: [echo, hi]\n'),
        doc('x', '  command: [echo, ho]\n'),
        doc('x', '  command: [echo, hi]\n').replace('berth/busybox:local', 'berth/busybox:other'),
        doc('x', '  command: [echo, hi]\n  env: {A: "1"}\n'),
        doc('x', '  command: [echo, hi]\n  workingDir: /w\n'),
        doc('x', '  command: [echo, hi]\n  results: elsewhere\n'),
        doc('x', '  command: [echo, hi]\n  network: {mode: bridge}\n'),
        doc('x', '  command: [echo, hi]\n  resources: {cpus: 1}\n'),
        doc('x', '  command: [echo, hi]\n  resources: {pids: 10}\n'),
        doc('x', '  command: [echo, hi]\n  deadlineSeconds: 5\n'),
        doc('x', '  command: [echo, hi]\n  volumes: [{name: v, mountPath: /v}]\n'),
        doc('x', '  command: [echo, hi]\n  secrets: [{name: s, fromEnv: S}]\n'),
      ];
      const hashes = await Promise.all(variants.map((v) => hashOf(v)));
      expect(new Set([base, ...hashes]).size).to.equal(variants.length + 1);
    });

    it('follows secret sources by kind and variable, never by value or file location', async () => {
      const fromEnvA = await hashOf(doc('x', '  secrets: [{name: s, fromEnv: A}]\n'));
      const fromEnvB = await hashOf(doc('x', '  secrets: [{name: s, fromEnv: B}]\n'));
      const file1 = await hashOf(doc('x', '  secrets: [{name: s, fromFile: ./one}]\n'), { one: 'v1' });
      const file2 = await hashOf(doc('x', '  secrets: [{name: s, fromFile: ./two}]\n'), { two: 'v2' });
      expect(fromEnvA).not.to.equal(fromEnvB);
      expect(file1).to.equal(file2);
      expect(file1).not.to.equal(fromEnvA);
    });

    it("follows the fixture's content, not where the specs folder is", async () => {
      const sb = sandbox({ 'a.yaml': doc('x', '  fixture: ./fx\n'), 'fx/in.txt': 'one', 'fx/sub/b.txt': 'b' });
      const load = async (): Promise<string> => {
        const r = await loadSpecs({ specsDir: sb.specs, resultsRoot: sb.results });
        expect(r.errors).to.deep.equal([]);
        return r.specs[0]?.hash ?? '';
      };
      const first = await load();
      expect(await load()).to.equal(first);
      writeFileSync(path.join(sb.specs, 'fx', 'in.txt'), 'two');
      const edited = await load();
      expect(edited).not.to.equal(first);
      const moved = path.join(tempDir(), 'moved');
      renameSync(sb.specs, moved);
      const r = await loadSpecs({ specsDir: moved, resultsRoot: sb.results });
      expect(r.specs[0]?.hash).to.equal(edited);
      expect(r.specs[0]?.spec.fixture).to.equal(path.join(moved, 'fx'));
    });
  });
});
