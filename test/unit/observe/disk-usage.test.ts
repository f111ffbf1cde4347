import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { linkSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { countDisk } from '../../../src/observe/disk-usage';

const BIG = { stopAboveBytes: Number.MAX_SAFE_INTEGER, maxEntries: Number.MAX_SAFE_INTEGER };
const KiB = 1024;

describe('disk measure (observe/disk.ts)', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(path.join(os.tmpdir(), 'berth-disk-'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('counts every entry at least one 4 KiB block, a file its bytes, a folder once', async () => {
    writeFileSync(path.join(root, 'a'), Buffer.alloc(100 * KiB, 1));
    writeFileSync(path.join(root, 'empty'), '');
    mkdirSync(path.join(root, 'd'));
    writeFileSync(path.join(root, 'd', 'one'), 'x');
    const c = await countDisk([root], BIG);
    // root + a + empty + d + d/one: 100 KiB for a, one block for each of the four others (folders are one block on ext4/xfs/tmpfs or count the minimum)
    expect(c.entries).to.equal(5);
    expect(c.bytes).to.be.at.least(100 * KiB + 4 * 4 * KiB);
    expect(c.bytes).to.be.below(100 * KiB + 4 * 4 * KiB + 64 * KiB);
    expect(c).to.deep.include({ complete: true, over: false });
  });

  it('follows no link: a link to a big tree counts as the link', async () => {
    const outside = mkdtempSync(path.join(os.tmpdir(), 'berth-disk-out-'));
    try {
      writeFileSync(path.join(outside, 'big'), Buffer.alloc(1024 * KiB, 1));
      symlinkSync(outside, path.join(root, 'to-outside'));
      symlinkSync(path.join(outside, 'big'), path.join(root, 'to-big'));
      const c = await countDisk([root], BIG);
      expect(c.entries).to.equal(3);
      expect(c.bytes).to.be.below(64 * KiB);
      // a root that is itself a link counts as the link, never its target
      const viaLink = await countDisk([path.join(root, 'to-outside')], BIG);
      expect(viaLink.entries).to.equal(1);
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });

  it('a sparse file counts its size; a file with several links counts once', async () => {
    const sparse = path.join(root, 'sparse');
    writeFileSync(sparse, '');
    truncateSync(sparse, 512 * 1024 * KiB);
    writeFileSync(path.join(root, 'f'), Buffer.alloc(256 * KiB, 1));
    linkSync(path.join(root, 'f'), path.join(root, 'f2'));
    const c = await countDisk([root], BIG);
    expect(c.entries).to.equal(4);
    expect(c.bytes).to.be.at.least(512 * 1024 * KiB + 256 * KiB);
    expect(c.bytes).to.be.below(512 * 1024 * KiB + 2 * 256 * KiB);
  });

  it('stops as soon as the count passes the limit, and at the entry budget', async () => {
    for (let i = 0; i < 1000; i++) writeFileSync(path.join(root, `e${i}`), '');
    const over = await countDisk([root], { stopAboveBytes: 40 * 4 * KiB, maxEntries: Number.MAX_SAFE_INTEGER });
    expect(over).to.deep.include({ over: true, complete: true });
    expect(over.entries).to.be.at.most(41); // the root folder of a thousand names is larger than one block
    expect(over.bytes)
      .to.be.above(40 * 4 * KiB)
      .and.at.most(40 * 4 * KiB + 4 * KiB);
    const capped = await countDisk([root], { stopAboveBytes: Number.MAX_SAFE_INTEGER, maxEntries: 100 });
    expect(capped).to.deep.include({ over: false, complete: false, entries: 100 });
  });

  it('walks names that are not UTF-8, deep trees, fifos; a missing root counts nothing', async () => {
    const bad = Buffer.concat([Buffer.from(root + '/'), Buffer.from([0x66, 0xff, 0xfe])]);
    mkdirSync(bad);
    writeFileSync(Buffer.concat([bad, Buffer.from('/inside')]), Buffer.alloc(64 * KiB, 1));
    let deep = path.join(root, 'deep');
    for (let i = 0; i < 200; i++) deep = path.join(deep, 'd');
    mkdirSync(deep, { recursive: true });
    execFileSync('mkfifo', [path.join(root, 'fifo')]);
    const c = await countDisk([root, path.join(root, 'missing')], BIG);
    // root, the bad folder and its file, deep + 200 folders, the fifo
    expect(c.entries).to.equal(1 + 2 + 201 + 1);
    expect(c.bytes).to.be.at.least(64 * KiB);
  });
});
