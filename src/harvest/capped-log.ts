/**
 * A log written to a file as it is read, never held whole: at most `maxBytes` of it are kept,
 * the first half as it comes and the last half in a ring of chunks. A log longer than that is
 * cut in the middle, where one marker line says how many bytes were left out. Memory is bounded
 * by half the cap plus one chunk, whatever the log's size.
 */
import type { FileHandle } from 'node:fs/promises';
import type { Readable } from 'node:stream';

export interface CappedLog {
  /** Bytes the log had. */
  total: number;
  /** Bytes cut out of its middle (0 when it was kept whole). */
  cut: number;
}

/** The line that stands where the middle of a log was cut. */
export function cutMarker(cut: number, total: number, maxBytes: number): string {
  const head = Math.floor(maxBytes / 2);
  return `[berth: ${cut} bytes of this log were cut here: it had ${total} bytes, more than --log-max-bytes ${maxBytes}; the first ${head} and the last ${maxBytes - head} are kept]\n`;
}

/** Reads `stream` to its end into `out` (an open file), keeping its head and tail. */
export async function writeCappedLog(stream: Readable, out: FileHandle, maxBytes: number): Promise<CappedLog> {
  const headMax = Math.floor(maxBytes / 2);
  const tailMax = maxBytes - headMax;
  let head = 0;
  let total = 0;
  let lastHeadByte = 0x0a;
  let tail: Buffer[] = [];
  let tailBytes = 0;
  for await (const c of stream) {
    let chunk = Buffer.isBuffer(c) ? c : Buffer.from(String(c));
    total += chunk.length;
    if (head < headMax) {
      const take = chunk.subarray(0, headMax - head);
      await out.write(take);
      head += take.length;
      if (take.length) lastHeadByte = take[take.length - 1] as number;
      chunk = chunk.subarray(take.length);
      if (!chunk.length) continue;
    }
    tail.push(Buffer.from(chunk)); // a copy: the engine's buffers are not kept alive by slices
    tailBytes += chunk.length;
    while (tail.length > 1 && tailBytes - (tail[0] as Buffer).length >= tailMax) tailBytes -= (tail.shift() as Buffer).length;
  }
  let rest = Buffer.concat(tail, tailBytes);
  tail = [];
  if (rest.length > tailMax) rest = rest.subarray(rest.length - tailMax);
  const cut = total - head - rest.length;
  if (cut > 0) await out.write((lastHeadByte === 0x0a ? '' : '\n') + cutMarker(cut, total, maxBytes));
  await out.write(rest);
  return { total, cut };
}
