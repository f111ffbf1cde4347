/**
 * A command started in a running container through dockerode (ContainerClient.execStart): the
 * hijacked connection split into stdout and stderr (the engine's 8-byte frame headers, as
 * demux.ts reads them; with a terminal, everything is stdout), each read only as fast as its
 * reader takes it, and the exit code asked of the engine once the output has ended.
 */
import type Dockerode from 'dockerode';
import type { Duplex } from 'node:stream';
import { PassThrough, Writable } from 'node:stream';
import type { ExecOptions, ExecSession } from '../types';

/** Splits the engine's frames into two streams; waits while either reader is full. */
class Split extends Writable {
  private pending: Buffer = Buffer.alloc(0);
  constructor(
    private readonly out: PassThrough,
    private readonly err: PassThrough,
  ) {
    super();
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    this.pending = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    let full = false;
    while (this.pending.length >= 8) {
      const type = this.pending[0] as number;
      const size = this.pending.readUInt32BE(4);
      if (this.pending.length < 8 + size) break;
      const body = this.pending.subarray(8, 8 + size);
      this.pending = this.pending.subarray(8 + size);
      if (!(type === 2 ? this.err : this.out).write(body)) full = true;
    }
    if (!full) return cb();
    // the frame went to a reader that is full: the next chunk waits until both can take more
    let waiting = 0;
    const go = () => {
      if (--waiting <= 0) cb();
    };
    for (const s of [this.out, this.err])
      if (s.writableNeedDrain) {
        waiting++;
        s.once('drain', go);
      }
    if (waiting === 0) cb();
  }

  override _final(cb: (err?: Error | null) => void): void {
    this.out.end();
    this.err.end();
    cb();
  }
}

/** How long the engine may take to mark an exec whose output ended as exited. */
const EXIT_SETTLE_MS = 5_000;

/** The session of exec `ex`, whose hijacked connection is `socket`. */
export function execSession(ex: Dockerode.Exec, socket: Duplex, o: ExecOptions): ExecSession {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let closed = false;
  if (o.tty) {
    stderr.end();
    socket.pipe(stdout);
  } else socket.pipe(new Split(stdout, stderr));
  const ended = new Promise<void>((resolve, reject) => {
    socket.once('end', () => resolve());
    socket.once('close', () => resolve());
    socket.once('error', (err) => (closed ? resolve() : reject(err)));
  });
  const exit = ended.then(async () => {
    // the engine marks the exec exited a moment after its output ends
    const until = Date.now() + EXIT_SETTLE_MS;
    for (;;) {
      const info = await ex.inspect();
      if (!info.Running || Date.now() >= until) return info.ExitCode ?? -1;
      await new Promise((r) => setTimeout(r, 20));
    }
  });
  // nobody may wait for it (a session closed early): not an unhandled rejection
  exit.catch(() => undefined);
  if (!o.stdin) socket.on('error', () => undefined);
  return {
    stdout,
    stderr,
    stdin: o.stdin ? socket : null,
    exit,
    resize: async (rows, cols) => {
      await ex.resize({ h: rows, w: cols });
    },
    close: () => {
      closed = true;
      socket.destroy();
      stdout.end();
      stderr.end();
    },
  };
}
