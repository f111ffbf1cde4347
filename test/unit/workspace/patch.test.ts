/**
 * workspace/patch: the patch of many text edits (at the start, the middle and the end of
 * long files, several in one file, with and without a final newline, CRLF lines, files emptied
 * or filled) applies with `git apply` and `patch -p1` to the old files and gives the new ones,
 * and an edit in a long file is diffed by the lines around it (hunks numbered in the whole file).
 * Sections made ahead (prepareSection, as the export makes them while the archive is read) give
 * the very patch writePatch makes from its sources.
 */
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, promises as fsp, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { prepareSection, writePatch, type PatchFile, type PatchSources, type PreparedSection } from '../../../src/workspace/patch';

/** A seeded generator: the same cases every run. */
function rng(seed: number): () => number {
  let x = seed >>> 0;
  return () => {
    x = (x * 1664525 + 1013904223) >>> 0;
    return x / 2 ** 32;
  };
}

describe('workspace/patch', () => {
  let tmp: string;
  beforeEach(() => {
    tmp = mkdtempSync(path.join(os.tmpdir(), 'berth-patch-'));
  });
  afterEach(() => rmSync(tmp, { recursive: true, force: true }));

  it('a patch of edits anywhere in long files applies with git apply and patch -p1 and gives the new files', async () => {
    const r = rng(36);
    const cases = new Map<string, [string, string]>();
    const lines = (n: number, tag: string, eol = '\n') => Array.from({ length: n }, (_, i) => `${tag} line ${i} ${Math.floor(r() * 1e6)}${eol}`);
    for (let k = 0; k < 40; k++) {
      const eol = k % 7 === 0 ? '\r\n' : '\n';
      const old = lines(5 + Math.floor(r() * 300), `f${k}`, eol);
      const now = [...old];
      const edits = 1 + Math.floor(r() * 3);
      for (let e = 0; e < edits; e++) {
        const where = [0, now.length - 1, Math.floor(r() * now.length)][Math.floor(r() * 3)] as number;
        const kind = Math.floor(r() * 3);
        if (kind === 0) now.splice(where, 1, `changed ${k}.${e}${eol}`);
        else if (kind === 1) now.splice(where, 0, `inserted ${k}.${e}${eol}`, `and more${eol}`);
        else if (now.length > 1) now.splice(where, 1);
      }
      let o = old.join('');
      let n = now.join('');
      if (k % 5 === 1) n = n.replace(/\r?\n$/, ''); // the new side loses its final newline
      if (k % 5 === 2) o = o.replace(/\r?\n$/, ''); // the old side had none
      cases.set(`t/f${k}.txt`, [o, n]);
    }
    cases.set('t/emptied.txt', [lines(50, 'e').join(''), '']);
    cases.set('t/filled.txt', ['', lines(50, 'f').join('')]);
    cases.set('t/same-ends.txt', [
      ['a\n', 'b\n', ...lines(100, 's'), 'y\n', 'z\n'].join(''),
      ['a\n', 'b\n', ...lines(100, 's').reverse(), 'y\n', 'z\n'].join(''),
    ]);
    const changes: PatchFile[] = [...cases.keys()].map((p) => ({ path: p, oldMode: 0o644, newMode: 0o644, content: true }));
    const patchFile = path.join(tmp, 'changes.patch');
    const out = await fsp.open(patchFile, 'wx');
    try {
      await writePatch(out, path.join(tmp, '.body'), changes, {
        before: async (p) => Buffer.from((cases.get(p) as [string, string])[0]),
        after: async (p) => Buffer.from((cases.get(p) as [string, string])[1]),
      });
    } finally {
      await out.close();
    }
    const patch = readFileSync(patchFile, 'utf8');
    for (const tool of ['git', 'patch'] as const) {
      const dir = path.join(tmp, tool);
      mkdirSync(path.join(dir, 't'), { recursive: true });
      for (const [p, [o]] of cases) writeFileSync(path.join(dir, p), o);
      if (tool === 'git') execFileSync('git', ['apply', patchFile], { cwd: dir });
      else execFileSync('patch', ['-p1', '-s', '--binary', '-i', patchFile], { cwd: dir });
      for (const [p, [, n]] of cases) expect(readFileSync(path.join(dir, p), 'utf8'), `${tool}: ${p}`).to.equal(n);
    }
    // an edit at line 200 of 300: one hunk, numbered in the whole file, 3 lines of context
    const long = Array.from({ length: 300 }, (_, i) => `l${i}\n`);
    const edited = [...long];
    edited[199] = 'edited\n';
    const one = await fsp.open(path.join(tmp, 'one.patch'), 'wx');
    try {
      await writePatch(one, path.join(tmp, '.body1'), [{ path: 'x.txt', oldMode: 0o644, newMode: 0o644, content: true }], {
        before: async () => Buffer.from(long.join('')),
        after: async () => Buffer.from(edited.join('')),
      });
    } finally {
      await one.close();
    }
    const text = readFileSync(path.join(tmp, 'one.patch'), 'utf8');
    expect(text).to.include('@@ -197,7 +197,7 @@\n l196\n l197\n l198\n-l199\n+edited\n l200\n l201\n l202\n');
    expect(patch.match(/^diff --git /gm)?.length).to.equal(cases.size);
  });

  it('sections made ahead give the same patch and binary set as sections made from the sources; one made for another change is not used', async () => {
    const sides = new Map<string, [Buffer | undefined, Buffer | undefined]>([
      ['src/text.txt', [Buffer.from('one\ntwo\nthree\n'), Buffer.from('one\n2\nthree\n')]],
      ['src/added.txt', [Buffer.alloc(0), Buffer.from('new\n')]],
      ['src/bin.dat', [Buffer.from('x\n'), Buffer.from([0, 1, 2])]],
      ['src/mode.sh', [undefined, undefined]],
      ['src/secret.txt', [Buffer.from('s\n'), undefined]],
      ['src/gone.txt', [Buffer.from('bye\n'), Buffer.alloc(0)]],
      ['src/late.txt', [Buffer.from('l\n'), Buffer.from('L\n')]],
    ]);
    const changes: PatchFile[] = [
      { path: 'src/text.txt', oldMode: 0o644, newMode: 0o755, content: true },
      { path: 'src/added.txt', newMode: 0o644, content: true },
      { path: 'src/bin.dat', oldMode: 0o644, newMode: 0o644, content: true },
      { path: 'src/mode.sh', oldMode: 0o644, newMode: 0o755, content: false },
      { path: 'src/secret.txt', oldMode: 0o644, newMode: 0o644, content: true },
      { path: 'src/gone.txt', oldMode: 0o644, content: true },
      { path: 'src/late.txt', oldMode: 0o644, newMode: 0o644, content: true },
    ];
    const src: PatchSources = {
      before: async (p) => sides.get(p)?.[0],
      after: async (p) => sides.get(p)?.[1],
    };
    const write = async (name: string, prepared?: Map<string, PreparedSection>): Promise<{ text: string; binary: string[] }> => {
      const out = await fsp.open(path.join(tmp, name), 'wx');
      try {
        const binary = await writePatch(out, path.join(tmp, `.${name}`), changes, src, prepared);
        return { text: readFileSync(path.join(tmp, name), 'utf8'), binary: [...binary].sort() };
      } finally {
        await out.close();
      }
    };
    const plain = await write('plain.patch');
    const prepared = new Map<string, PreparedSection>();
    for (const c of changes.filter((x) => x.newMode !== undefined && x.path !== 'src/late.txt')) {
      const [o, n] = sides.get(c.path) as [Buffer | undefined, Buffer | undefined];
      prepared.set(c.path, prepareSection(c, { oldText: c.content ? o : undefined, newText: c.content ? n : undefined }));
    }
    // made for another change (its mode, not its content): writePatch makes that file's section from the sources
    prepared.set(
      'src/gone.txt',
      prepareSection({ path: 'src/gone.txt', oldMode: 0o644, newMode: 0o644, content: true }, { oldText: Buffer.from('x\n'), newText: Buffer.from('y\n') }),
    );
    const ahead = await write('ahead.patch', prepared);
    expect(ahead).to.deep.equal(plain);
    expect(plain.binary).to.deep.equal(['src/bin.dat']);
    expect(plain.text).to.match(
      /^Binary files a\/src\/bin\.dat and b\/src\/bin\.dat differ\nBinary files a\/src\/secret\.txt and b\/src\/secret\.txt differ\n/,
    );
    expect(plain.text).to.include('deleted file mode 100644').and.include('old mode 100644\nnew mode 100755');
  });
});
