/**
 * Where each entry of a tar lies in it, found as the tar passes by (a Transform that passes every
 * byte on unchanged): an entry's span runs from its first header block (a pax or GNU long-name
 * header before it belongs to it) to the end of its data's padding. A stacked fixture archive is
 * made of such spans of each layer's archive (fixture-cache.ts): entries a later layer puts away
 * are left out without packing the layer again. Reads only headers; bounded memory.
 */
import { Transform, type TransformCallback } from 'node:stream';

export interface Span {
  start: number;
  end: number;
}

const BLOCK = 512;
/** Header types that describe the entry after them (pax, pax global, GNU long name and long link). */
const EXTENDED = new Set(['x', 'g', 'L', 'K']);

/** The size field of a header block: octal text, or base-256 (a set high bit) for sizes past 8 GiB. */
export function headerSize(h: Buffer): number {
  const field = h.subarray(124, 136);
  if (((field[0] as number) & 0x80) !== 0) {
    let n = 0;
    for (let i = 1; i < field.length; i++) n = n * 256 + (field[i] as number);
    return n;
  }
  const text = field.toString('latin1').replace(/[\0 ].*$/s, '');
  return text === '' ? 0 : parseInt(text, 8);
}

export class TarSpans extends Transform {
  /** One per entry, in the order of the archive. */
  readonly spans: Span[] = [];
  private pos = 0;
  private skipUntil = 0;
  private readonly header = Buffer.alloc(BLOCK);
  private have = 0;
  private extendedFrom: number | undefined;
  private ended = false;

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    let i = 0;
    while (i < chunk.length && !this.ended) {
      if (this.pos < this.skipUntil) {
        const n = Math.min(chunk.length - i, this.skipUntil - this.pos);
        i += n;
        this.pos += n;
        continue;
      }
      const n = Math.min(chunk.length - i, BLOCK - this.have);
      chunk.copy(this.header, this.have, i, i + n);
      this.have += n;
      i += n;
      this.pos += n;
      if (this.have === BLOCK) {
        this.have = 0;
        this.block(this.pos - BLOCK);
      }
    }
    cb(null, chunk);
  }

  private block(at: number): void {
    if (this.header.every((b) => b === 0)) {
      this.ended = true; // the end-of-archive blocks
      return;
    }
    const size = headerSize(this.header);
    const end = at + BLOCK + Math.ceil(size / BLOCK) * BLOCK;
    this.skipUntil = end;
    const type = String.fromCharCode(this.header[156] as number);
    if (EXTENDED.has(type)) {
      this.extendedFrom ??= at;
      return;
    }
    this.spans.push({ start: this.extendedFrom ?? at, end });
    this.extendedFrom = undefined;
  }
}
