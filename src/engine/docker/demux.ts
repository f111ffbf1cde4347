/**
 * Demultiplexes the engine's log stream for non-TTY containers: frames of an 8-byte header
 * (stream type, 3 zero bytes, big-endian payload length) and the payload. Stdout and stderr
 * are interleaved in the order the engine sent them.
 */
import { Transform, type TransformCallback } from 'node:stream';

export class Demux extends Transform {
  private pending: Buffer = Buffer.alloc(0);

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.pending = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    while (this.pending.length >= 8) {
      const type = this.pending[0];
      const size = this.pending.readUInt32BE(4);
      if (type !== undefined && type > 2) {
        // Not multiplexed (a TTY container): pass everything through as is.
        this.push(this.pending);
        this.pending = Buffer.alloc(0);
        break;
      }
      if (this.pending.length < 8 + size) break;
      this.push(this.pending.subarray(8, 8 + size));
      this.pending = this.pending.subarray(8 + size);
    }
    cb();
  }

  override _flush(cb: TransformCallback): void {
    if (this.pending.length) this.push(this.pending);
    cb();
  }
}
