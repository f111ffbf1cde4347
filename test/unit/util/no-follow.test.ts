/** util/no-follow: folders made and files opened one component at a time, never through a link. */
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readlinkSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { extract } from 'tar-stream';
import { type Archive, fixtureTar } from '../../../src/pack/archive';
import { assertFoldersBelow, mkdirBelow, openFileBelow, SyncFolders, UnsafePathError } from '../../../src/util/no-follow';

/** The entries of a tar: name → type (and link target). */
/** Entries of an archive by name (type and owner); with `sums`, each file's sha256 too. */
async function entries(archive: Archive, sums = false): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const ex = extract();
  const done = new Promise<void>((resolve, reject) => {
    ex.on('entry', (h, stream, next) => {
      out[h.name] = h.type === 'symlink' ? `symlink:${h.linkname}` : `${h.type}:${h.uid}:${h.gid}`;
      const hash = createHash('sha256');
      stream.on('data', (c: unknown) => hash.update(c as Buffer));
      stream.on('end', () => {
        if (sums && h.type === 'file') out[h.name] += `:${hash.digest('hex')}`;
        next();
      });
    });
    ex.on('finish', resolve);
    ex.on('error', reject);
  });
  const body = archive.body();
  if (Buffer.isBuffer(body)) ex.end(body);
  else body.pipe(ex);
  await done;
  await archive.dispose();
  return out;
}

describe('util/no-follow', () => {
  let root: string;
  let outside: string;
  beforeEach(() => {
    root = mkdtempSync(path.join(os.tmpdir(), 'berth-nofollow-'));
    outside = mkdtempSync(path.join(os.tmpdir(), 'berth-nofollow-out-'));
  });
  afterEach(() => {
    rmSync(root, { recursive: true, force: true });
    rmSync(outside, { recursive: true, force: true });
  });

  it('makes folders component by component and refuses a link on the way, making nothing through it', async () => {
    await mkdirBelow(root, path.join(root, 'a', 'b', 'c'));
    expect(statSync(path.join(root, 'a', 'b', 'c')).isDirectory()).to.equal(true);
    symlinkSync(outside, path.join(root, 'a', 'l'));
    const err = await mkdirBelow(root, path.join(root, 'a', 'l', 'x')).catch((e: unknown) => e);
    expect(err).to.be.instanceOf(UnsafePathError);
    expect((err as Error).message).to.equal(`${path.join(root, 'a', 'l')} is a symbolic link; berth never follows one there`);
    expect(readlinkSync(path.join(root, 'a', 'l'))).to.equal(outside);
    expect(await assertFoldersBelow(root, path.join(root, 'a', 'b', 'c'))).to.equal(undefined);
    expect(await assertFoldersBelow(root, path.join(root, 'a', 'l')).catch((e: unknown) => e)).to.be.instanceOf(UnsafePathError);
    // exclusive: the last folder must be made here
    const again = await mkdirBelow(root, path.join(root, 'a', 'b', 'c'), { exclusiveLast: true }).catch((e: unknown) => e);
    expect((again as { code?: string }).code).to.equal('EEXIST');
  });

  it('opens a file only when neither it nor a folder above it (below the base) is a link', async () => {
    mkdirSync(path.join(root, 'd'));
    writeFileSync(path.join(root, 'd', 'f'), 'value');
    writeFileSync(path.join(outside, 'f'), 'host');
    const fh = await openFileBelow('/', path.join(root, 'd', 'f'));
    expect((await fh.readFile()).toString()).to.equal('value');
    await fh.close();
    symlinkSync(path.join(outside, 'f'), path.join(root, 'd', 'lf'));
    symlinkSync(outside, path.join(root, 'ld'));
    for (const p of [path.join(root, 'd', 'lf'), path.join(root, 'ld', 'f')]) {
      const err = await openFileBelow('/', p).catch((e: unknown) => e);
      expect(err, p).to.be.instanceOf(UnsafePathError);
      expect((err as Error).message).to.include('is a symbolic link');
    }
  });

  it('SyncFolders reads small files with no link followed, a folder swapped for a link after it was opened included, and closes what it evicts', () => {
    for (const d of ['a', 'b', 'c', 'd']) {
      mkdirSync(path.join(root, d, 'sub'), { recursive: true });
      writeFileSync(path.join(root, d, 'sub', 'f'), `in ${d}`);
    }
    writeFileSync(path.join(outside, 'f'), 'host');
    const fds = (): number => readdirSync('/proc/self/fd').length;
    const before = fds();
    const r = new SyncFolders(3);
    try {
      for (const d of ['a', 'b', 'c', 'd', 'a']) expect(r.read(root, `${d}/sub/f`, 100)?.body.toString(), d).to.equal(`in ${d}`);
      // at most 3 folders open at once, however many were read from
      expect(fds() - before).to.be.at.most(3);
      expect(r.read(root, 'a/sub/f', 3), 'larger than max').to.equal(undefined);
      symlinkSync(outside, path.join(root, 'ld'));
      symlinkSync(path.join(outside, 'f'), path.join(root, 'a', 'sub', 'lf'));
      for (const rel of ['ld/f', 'a/sub/lf']) {
        expect(() => r.read(root, rel, 100), rel).to.throw(UnsafePathError, 'is a symbolic link');
      }
      expect(() => r.read(root, 'a/sub', 100)).to.throw(UnsafePathError, 'is not a regular file');
      expect(() => r.read(root, '../x', 100)).to.throw(UnsafePathError, 'is not inside');
      expect(() => r.read(root, 'a/nope', 100)).to.throw(/ENOENT/);
      // a folder it holds open, swapped for a link: what it reads is the folder it opened, never the link's target
      rmSync(path.join(root, 'b'), { recursive: true });
      symlinkSync(outside, path.join(root, 'b'));
      const got = (() => {
        try {
          return r.read(root, 'b/sub/f', 100)?.body.toString();
        } catch (err) {
          return (err as Error).message;
        }
      })();
      expect(got).to.not.equal('host');
    } finally {
      r.close();
    }
    expect(fds()).to.equal(before);
  });

  it('builds a fixture tar with links as links, owned as asked, and refuses a link pointing out or a linked fixture', async () => {
    const fx = path.join(root, 'fx');
    mkdirSync(path.join(fx, 'sub'), { recursive: true });
    writeFileSync(path.join(fx, 'a.txt'), 'a');
    symlinkSync('a.txt', path.join(fx, 'l'));
    symlinkSync('../a.txt', path.join(fx, 'sub', 'up'));
    const layer = (p: string) => [{ path: p, digest: 'not-kept' }];
    expect(await entries(await fixtureTar(layer(fx), '/work/dir', 7, 8))).to.deep.equal({
      'work/': 'directory:0:0',
      'work/dir/': 'directory:7:8',
      'work/dir/a.txt': 'file:7:8',
      'work/dir/l': 'symlink:a.txt',
      'work/dir/sub/': 'directory:7:8',
      'work/dir/sub/up': 'symlink:../a.txt',
    });
    symlinkSync('../../etc/passwd', path.join(fx, 'sub', 'out'));
    expect(((await fixtureTar(layer(fx), '/w').catch((e: unknown) => e)) as Error).message).to.match(/fixture link .*out points outside the fixture/);
    symlinkSync(fx, path.join(root, 'lfx'));
    expect(await fixtureTar(layer(path.join(root, 'lfx')), '/w').catch((e: unknown) => e)).to.be.instanceOf(UnsafePathError);
  });

  it('streams a large fixture from its packed file, files streamed from their handles, the same bytes; dispose removes a layer packed for that copy only', async () => {
    const fx = path.join(root, 'big');
    mkdirSync(fx);
    const big = Buffer.alloc(3 * 1024 * 1024 + 17, 7);
    for (let i = 0; i < big.length; i += 4096) big[i] = i % 251;
    writeFileSync(path.join(fx, 'big.bin'), big);
    writeFileSync(path.join(fx, 'small.txt'), 'small');
    const want = {
      'w/': 'directory:0:0',
      'w/big.bin': `file:0:0:${createHash('sha256').update(big).digest('hex')}`,
      'w/small.txt': `file:0:0:${createHash('sha256').update('small').digest('hex')}`,
    };
    const before = readdirSync(os.tmpdir()).filter((n) => n.startsWith('berth-fixture-')).length;
    const streamed = await fixtureTar([{ path: fx, digest: 'any' }], '/w', 0, 0);
    expect(Buffer.isBuffer(streamed.body())).to.equal(false);
    expect(readdirSync(os.tmpdir()).filter((n) => n.startsWith('berth-fixture-')).length).to.equal(before + 1);
    const again = await fixtureTar([{ path: fx, digest: 'any' }], '/w', 0, 0);
    let bytes = 0;
    for await (const c of again.body()) bytes += (c as Buffer).length;
    expect(bytes).to.equal(again.bytes);
    await again.dispose();
    expect(await entries(streamed, true)).to.deep.equal(want);
    expect(readdirSync(os.tmpdir()).filter((n) => n.startsWith('berth-fixture-')).length).to.equal(before);
  });
});
