/** util/sha256.ts: the JavaScript SHA-256 spec/hash.ts uses for a process's first few small inputs (start-up, issue 55). */
import { expect } from 'chai';
import fc from 'fast-check';
import { createHash } from 'node:crypto';
import { sha256Hex } from '../../../src/spec/hash';
import { sha256HexJs } from '../../../src/util/sha256';

const native = (d: string | Uint8Array) => createHash('sha256').update(d).digest('hex');

describe('util/sha256: SHA-256 in JavaScript', () => {
  it('gives the known digests (FIPS 180-4 examples, and the block edges around 55-64 bytes)', () => {
    expect(sha256HexJs('')).to.equal('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(sha256HexJs('abc')).to.equal('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(sha256HexJs('abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq')).to.equal(
      '248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1',
    );
    for (let n = 50; n <= 130; n++) expect(sha256HexJs(Buffer.alloc(n, n)), `${n} bytes`).to.equal(native(Buffer.alloc(n, n)));
  });

  it('gives what node:crypto gives, for any bytes and any string (as its UTF-8 bytes)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 700 }), (b) => sha256HexJs(b) === native(b)),
      { numRuns: 300 },
    );
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 200 }), (s) => sha256HexJs(s) === native(s)),
      { numRuns: 300 },
    );
  });

  it("spec/hash.ts sha256Hex: node:crypto's digest whichever way it is taken (past its budget, or a long input)", () => {
    const long = 'x'.repeat(5000);
    expect(sha256Hex(long)).to.equal(native(long));
    for (let i = 0; i < 200; i++) {
      const s = `specs-${i}-${'y'.repeat(i)}`;
      expect(sha256Hex(s)).to.equal(native(s));
    }
  });
});
