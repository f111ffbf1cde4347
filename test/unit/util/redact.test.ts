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
    // random, but not ending in a line break (one is dropped from a value, as a key file's last newline: its base64 would then differ)
    const long = { name: 'long', value: Buffer.concat([randomBytes(199), Buffer.from('z')]) };
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

  it('agrees with a plain search for every form on random text over a small alphabet (deep fallbacks, overlaps), whole and streamed', async () => {
    let seed = 7;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const word = (n: number) => Array.from({ length: n }, () => 'ab'[rnd(2)]).join('');
    for (let round = 0; round < 30; round++) {
      const vals = Array.from({ length: 1 + rnd(4) }, (_, i) => ({ name: `v${i}`, value: Buffer.from(word(4 + rnd(14))) }));
      const rr = new Redactor(vals, 4);
      let text = '';
      for (let k = 0; k < 40; k++) text += rnd(3) === 0 ? (vals[rnd(vals.length)] as { value: Buffer }).value.toString() : word(rnd(12));
      // the reference: every occurrence of every form, by end, merged where one starts before the last ends
      const occ: { start: number; end: number; id: number }[] = [];
      vals.forEach((v, id) => {
        for (const f of formsOf(v.value, 4)) {
          const needle = f.toString('latin1');
          for (let at = text.indexOf(needle); at >= 0; at = text.indexOf(needle, at + 1)) occ.push({ start: at, end: at + needle.length, id });
        }
      });
      occ.sort((x, y) => x.end - y.end || y.end - y.start - (x.end - x.start));
      const spans: { start: number; end: number; id: number }[] = [];
      for (const o of occ) {
        const sp = { ...o };
        while (spans.length && sp.start < (spans[spans.length - 1] as { end: number }).end) {
          const last = spans.pop() as { start: number; end: number; id: number };
          if (last.start <= sp.start) sp.id = last.id;
          sp.start = Math.min(sp.start, last.start);
          sp.end = Math.max(sp.end, last.end);
        }
        spans.push(sp);
      }
      let want = '';
      let at = 0;
      for (const sp of spans) {
        want += text.slice(at, sp.start) + `[redacted:${(vals[sp.id] as { name: string }).name}]`;
        at = sp.end;
      }
      want += text.slice(at);
      expect(rr.redactText(text), `round ${round}`).to.equal(want);
      expect(await streamed(rr, Buffer.from(text), [1 + rnd(9)]), `round ${round} streamed`).to.equal(want);
    }
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
    // a value inside a longer one ends first: the longer one still goes whole
    const inner = new Redactor(
      [
        { name: 'outer', value: Buffer.from('0123456789') },
        { name: 'inner', value: Buffer.from('3456') },
      ],
      4,
    );
    expect(inner.redactText('x 0123456789 y 3456 z')).to.equal('x [redacted:outer] y [redacted:inner] z');
    expect(rr.redactText('abcdefgh efghijkl')).to.equal('[redacted:a] [redacted:b]');
  });

  it('leaves values shorter than the minimum alone and names them', () => {
    const rr = new Redactor([{ name: 'pin', value: Buffer.from('123\n') }, ...secrets], 4);
    expect(rr.tooShort).to.deep.equal(['pin']);
    expect(rr.redactText('pin 123')).to.equal('pin 123');
    expect(formsOf(Buffer.from('abcd'), 4).every((f) => f.length >= 4)).to.equal(true);
  });

  it('leaves values longer than the maximum alone and names them; a 64 KiB value is found, in bounded memory', () => {
    const big = randomBytes(64 * 1024);
    // a value's trailing line breaks are trimmed (as a file's final newline): keep the random
    // value's last byte off \n and \r, so the whole value is the secret (failed 1 run in 128)
    big[big.length - 1] = 0x42;
    const rr = new Redactor(
      [
        { name: 'bundle', value: Buffer.alloc(64 * 1024 + 1, 'k') },
        { name: 'pem', value: big },
      ],
      4,
      64 * 1024,
    );
    expect(rr.tooLong).to.deep.equal(['bundle']);
    expect(rr.redact(Buffer.concat([Buffer.from('<'), Buffer.from(big.toString('base64')), Buffer.from('>')])).toString()).to.match(/^<\[redacted:pem\].?=*>$/);
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
