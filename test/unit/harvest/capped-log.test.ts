/** A log written capped (src/harvest/capped-log.ts): kept whole up to the cap, else head, marker, tail. */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { cutMarker, writeCappedLog } from '../../../src/harvest/capped-log';

async function capped(chunks: string[], max: number): Promise<{ text: string; total: number; cut: number }> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-capped-'));
  try {
    const file = path.join(dir, 'log');
    const h = await fs.open(file, 'w');
    const r = await writeCappedLog(Readable.from(chunks.map((c) => Buffer.from(c))), h, max);
    await h.close();
    return { text: await fs.readFile(file, 'utf8'), ...r };
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}

describe('capped log', function () {
  it('keeps a log of at most the cap whole, however it is chunked', async function () {
    expect(await capped(['abc', 'def\n', 'ghij'], 11)).to.deep.equal({ text: 'abcdef\nghij', total: 11, cut: 0 });
    expect(await capped(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k'], 11)).to.deep.equal({ text: 'abcdefghijk', total: 11, cut: 0 });
  });

  it('cuts the middle of a longer log: the first and last half kept, one marker line between', async function () {
    const body = 'x'.repeat(1000);
    const r = await capped(['HEAD\n', body, body, '\nTAIL\n'], 20);
    expect(r.total).to.equal(2011);
    expect(r.cut).to.equal(1991);
    expect(r.text).to.equal(`HEAD\nxxxxx\n${cutMarker(1991, 2011, 20)}xxxx\nTAIL\n`);
  });

  it('cuts at the first byte over the cap, whatever the chunking (a byte at a time)', async function () {
    const r = await capped('0123456789ab'.split(''), 11);
    expect(r).to.deep.equal({ text: `01234\n${cutMarker(1, 12, 11)}6789ab`, total: 12, cut: 1 });
  });
});
