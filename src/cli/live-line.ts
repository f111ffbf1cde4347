/**
 * The live progress line on a terminal (`[3s] 1 Blocked, 1 Running`, redrawn in place with
 * `\r`). Anything else written to stderr while it shows (a log line, a `berth:` message) first
 * clears it and then draws it again below, so the two never run into one line.
 */
import type * as Stream from 'node:stream';
import type { Io } from './io';

const CLEAR = '\r\x1b[K';

export class LiveLine {
  private shown = '';

  constructor(private readonly write: (s: string) => void) {}

  show(text: string): void {
    this.write(`${CLEAR}${text}`);
    this.shown = text;
  }

  /** Writes `s` (whole lines) above the live line. */
  above(s: string): void {
    if (!this.shown) return this.write(s);
    this.write(`${CLEAR}${s}${this.shown}`);
  }

  /** Ends the live line: what follows starts on a line of its own. */
  end(): void {
    if (this.shown) this.write('\n');
    this.shown = '';
  }

  /** A stream for the logger that writes above the live line (node:stream loaded here: on a terminal only, issue 55). */
  stream(): Stream.Writable {
    return new (require('node:stream') as typeof Stream).Writable({
      write: (chunk: Buffer | string, _enc, cb) => {
        this.above(typeof chunk === 'string' ? chunk : chunk.toString('utf8'));
        cb();
      },
    });
  }
}

const lines = new WeakMap<Io, LiveLine>();

/** The live line of this Io's stderr (one per Io). */
export function liveLine(io: Io): LiveLine {
  let l = lines.get(io);
  if (!l) lines.set(io, (l = new LiveLine((s) => io.err(s))));
  return l;
}
