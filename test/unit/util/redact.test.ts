/** util/redact: every form of a value replaced, in one buffer and across a stream's chunks; the scanner; short values. */
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { formsOf, Redactor } from '../../../src/util/redact';

const KEY = 'sk-test-0123456789abcdefXYZ+/=';
const secrets = [
  { name: 'api-key', value: Buffer.from(KEY + '\n') },
  { name: 'other', value: Buffer.from('hunter2-hunter2') },
];

/** `text` through a fresh redactor's stream, in the given chunk sizes (cycled). */
async function streamed(r: Redactor, text: Buffer, sizes: number[]): Promise<string> {
  const chunks: Buffer[] = [];
  let at = 0;
  for (let i = 0; at < text.length; i++) {
    const n = sizes[i % sizes.length] as number;
    chunks.push(text.subarray(at, at + n));
    at += n;
  }
  const out: Buffer[] = [];
  for await (const c of Readable.from(chunks).pipe(r.stream())) out.push(c as Buffer);
  return Buffer.concat(out).toString('utf8');
}

/** Every base64 a program could print for the value at any offset in what it encodes. */
function encodings(value: string): string[] {
  const out: string[] = [];
  for (const pre of ['', 'a', 'ab', 'token=']) {
    for (const post of ['', 'x', 'xy', '\n']) {
      const b = Buffer.from(pre + value + post);
      out.push(b.toString('base64'), b.toString('base64url'));
    }
  }
  out.push(Buffer.from(value).toString('hex'), Buffer.from(value).toString('hex').toUpperCase());
  return out;
}

describe('util/redact', () => {
  const r = new Redactor(secrets, 4);

  it('replaces the value, its base64 (standard, URL-safe, any alignment) and its hex', () => {
    expect(r.redactText(`key=${KEY}!`)).to.equal('key=[redacted:api-key]!');
    for (const e of encodings(KEY)) {
      const out = r.redactText(`got ${e} end`);
      expect(out, e).to.include('[redacted:api-key]');
      expect(out, e).not.to.include(e);
      // what is left of the encoding is at most one character either side (bits shared with neighbours)
      const left = out.replace(/^got /, '').replace(/ end$/, '').split('[redacted:api-key]');
      for (const part of left) expect(part.length, `${e} -> ${out}`).to.be.at.most(8);
    }
  });

  it('finds a value split across lines, or base64 wrapped at 76 columns', () => {
    expect(r.redactText(`a ${KEY.slice(0, 10)}\n${KEY.slice(10)} b`)).to.equal('a [redacted:api-key] b');
    expect(r.redactText(`a ${KEY.slice(0, 10)}\r\n${KEY.slice(10)} b`)).to.equal('a [redacted:api-key] b');
    const long = { name: 'long', value: randomBytes(200) };
    const lr = new Redactor([long], 4);
    const wrapped = long.value
      .toString('base64')
      .replace(/(.{76})/g, '$1\n')
      .trim();
    // the last character and its padding share bits with nothing of the value's own (at most 4 bits of it)
    expect(lr.redactText(`x\n${wrapped}\ny`)).to.match(/^x\n\[redacted:long\].?=*\ny$/);
  });

  it('redacts the same across any chunking of a stream as in one buffer', async () => {
    const text = Buffer.from(
      `start ${KEY} mid ${Buffer.from(KEY).toString('base64')} and ${KEY.slice(0, 5)}\n${KEY.slice(5)} hunter2-hunter2 ${'x'.repeat(100)} ${KEY}`,
    );
    const whole = r.redact(text).toString('utf8');
    expect(whole).not.to.include(KEY);
    for (const sizes of [[1], [2, 3], [7], [13, 1, 50], [KEY.length - 1], [1000]]) expect(await streamed(r, text, sizes), String(sizes)).to.equal(whole);
  });

  it('keeps what is not a value byte for byte, binary included', async () => {
    const noise = randomBytes(300_000);
    const got: Buffer[] = [];
    for await (const c of Readable.from([noise.subarray(0, 1234), noise.subarray(1234)]).pipe(
      new Redactor([{ name: 'k', value: Buffer.from('\x00\x01never-in-random-bytes') }], 4).stream(),
    ))
      got.push(c as Buffer);
    expect(Buffer.concat(got).equals(noise)).to.equal(true);
  });

  it('merges overlapping matches into one replacement, names the first', () => {
    const rr = new Redactor(
      [
        { name: 'a', value: Buffer.from('abcdefgh') },
        { name: 'b', value: Buffer.from('efghijkl') },
      ],
      4,
    );
    expect(rr.redactText('..abcdefghijkl..')).to.equal('..[redacted:a]..');
    expect(rr.redactText('abcdefgh efghijkl')).to.equal('[redacted:a] [redacted:b]');
  });

  it('leaves values shorter than the minimum alone and names them', () => {
    const rr = new Redactor([{ name: 'pin', value: Buffer.from('123\n') }, ...secrets], 4);
    expect(rr.tooShort).to.deep.equal(['pin']);
    expect(rr.redactText('pin 123')).to.equal('pin 123');
    expect(formsOf(Buffer.from('abcd'), 4).every((f) => f.length >= 4)).to.equal(true);
  });

  it('redacts every string of a JSON value, keys included', () => {
    expect(r.redactJson({ message: `x ${KEY}`, list: [KEY, 3, null], [KEY]: true })).to.deep.equal({
      message: 'x [redacted:api-key]',
      list: ['[redacted:api-key]', 3, null],
      '[redacted:api-key]': true,
    });
  });

  it('scans: which values a stream holds, across chunks', () => {
    const s = r.scanner();
    const text = Buffer.from(`nothing ${Buffer.from(KEY).toString('base64')} here`);
    s.update(text.subarray(0, 15));
    s.update(text.subarray(15));
    expect(s.found()).to.deep.equal(['api-key']);
    const t = r.scanner();
    t.update(Buffer.from('nothing at all'));
    expect(t.found()).to.deep.equal([]);
  });

  it('with no values, passes everything through as it is', async () => {
    const none = new Redactor([], 4);
    expect(none.empty).to.equal(true);
    const b = Buffer.from(KEY);
    expect(none.redact(b)).to.equal(b);
    expect(await streamed(none, b, [3])).to.equal(KEY);
  });
});
