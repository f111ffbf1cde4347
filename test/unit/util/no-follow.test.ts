/** util/no-follow: folders made and files opened one component at a time, never through a link. */
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readlinkSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { extract } from 'tar-stream';
import { type Archive, clearKeptArchives, fixtureTar } from '../../../src/execute/archive';
import { fixtureDigest } from '../../../src/spec/fixture-digest';
import { scanFixture } from '../../../src/spec/fixture-scan';
import { assertFoldersBelow, mkdirBelow, openFileBelow, UnsafePathError } from '../../../src/util/no-follow';

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

  it('builds a fixture tar with links as links, owned as asked, and refuses a link pointing out or a linked fixture', async () => {
    const fx = path.join(root, 'fx');
    mkdirSync(path.join(fx, 'sub'), { recursive: true });
    writeFileSync(path.join(fx, 'a.txt'), 'a');
    symlinkSync('a.txt', path.join(fx, 'l'));
    symlinkSync('../a.txt', path.join(fx, 'sub', 'up'));
    expect(await entries(await fixtureTar(fx, '/work/dir', 7, 8))).to.deep.equal({
      'work/': 'directory:0:0',
      'work/dir/': 'directory:7:8',
      'work/dir/a.txt': 'file:7:8',
      'work/dir/l': 'symlink:a.txt',
      'work/dir/sub/': 'directory:7:8',
      'work/dir/sub/up': 'symlink:../a.txt',
    });
    symlinkSync('../../etc/passwd', path.join(fx, 'sub', 'out'));
    expect(((await fixtureTar(fx, '/w').catch((e: unknown) => e)) as Error).message).to.match(/fixture link .*out points outside the fixture/);
    symlinkSync(fx, path.join(root, 'lfx'));
    expect(await fixtureTar(path.join(root, 'lfx'), '/w').catch((e: unknown) => e)).to.be.instanceOf(UnsafePathError);
  });

  it('spools a large fixture to a temp file as it is made, files streamed from their handles, the same bytes; dispose removes it', async () => {
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
    // over a 1 MiB spool limit: a stream from a temp file, gone after dispose
    const spooled = await fixtureTar(fx, '/w', 0, 0, 1024 * 1024);
    const body = spooled.body();
    expect(Buffer.isBuffer(body)).to.equal(false);
    const file = (body as unknown as { path: string }).path;
    expect(statSync(file).size).to.equal(spooled.bytes);
    expect(statSync(file).mode & 0o777).to.equal(0o600);
    (body as unknown as { destroy(): void }).destroy();
    expect(await entries(spooled, true)).to.deep.equal(want);
    expect(() => statSync(path.dirname(file))).to.throw(/ENOENT/);
    // under it: the same archive, in memory
    const held = await fixtureTar(fx, '/w');
    expect(Buffer.isBuffer(held.body())).to.equal(true);
    expect(await entries(held, true)).to.deep.equal(want);
  });

  it("keeps a fixture's archive only when what it packed has the spec's digest, and serves it again for that digest only", async () => {
    clearKeptArchives();
    const fx = path.join(root, 'kept');
    mkdirSync(path.join(fx, 'sub'), { recursive: true });
    writeFileSync(path.join(fx, 'a.txt'), 'a');
    writeFileSync(path.join(fx, 'sub', 'b.txt'), 'b');
    symlinkSync('a.txt', path.join(fx, 'l'));
    const digestNow = async () => fixtureDigest((await scanFixture(fx)).entries);
    const d1 = await digestNow();
    const first = await fixtureTar(fx, '/w', 0, 0, undefined, d1);
    const again = await fixtureTar(fx, '/w', 0, 0, undefined, d1);
    expect(again.body(), 'the same archive, not packed again').to.equal(first.body());
    expect(await fixtureTar(fx, '/w', 1, 1, undefined, d1).then((x) => x.body())).to.not.equal(first.body()); // another owner
    // edited: the loader's new digest gets a new archive with the new bytes
    writeFileSync(path.join(fx, 'sub', 'b.txt'), 'bb');
    const d2 = await digestNow();
    const edited = await fixtureTar(fx, '/w', 0, 0, undefined, d2);
    expect(edited.body()).to.not.equal(first.body());
    expect((await entries(edited, true))['w/sub/b.txt']).to.equal(`file:0:0:${createHash('sha256').update('bb').digest('hex')}`);
    expect((await fixtureTar(fx, '/w', 0, 0, undefined, d2)).body()).to.equal(edited.body());
    // a digest that is not what the fixture holds: packed each time, never kept
    const wrong = await fixtureTar(fx, '/w', 0, 0, undefined, 'f'.repeat(64));
    expect((await fixtureTar(fx, '/w', 0, 0, undefined, 'f'.repeat(64))).body()).to.not.equal(wrong.body());
    clearKeptArchives();
  });
});
