import { fstatSync, statSync, writeSync } from 'node:fs';

/** Where a command writes: human output on stdout, diagnostics on stderr. Tests pass their own. */
export interface Io {
  out(s: string): void;
  err(s: string): void;
  /** stderr is a terminal (live progress line). */
  isTTY: boolean;
}

/**
 * Whether fd 1 or 2 is a file or /dev/null: what Node makes a SyncWriteStream of (its stream for a
 * file), which writes each chunk with fs.writeSync. Such a stream is written here the same way
 * without making process.stdout or process.stderr, whose first use loads Node's stream modules
 * (~2 ms of every command's start, issue 55). A terminal, a pipe or anything else gets Node's
 * stream, as always.
 */
const direct: Partial<Record<1 | 2, boolean>> = {};
export function writesToFile(fd: 1 | 2): boolean {
  let d = direct[fd];
  if (d === undefined) {
    try {
      const st = fstatSync(fd);
      d = st.isFile() || (st.isCharacterDevice() && st.rdev === statSync('/dev/null').rdev);
    } catch {
      d = false;
    }
    direct[fd] = d;
  }
  return d;
}

function writer(fd: 1 | 2): (s: string) => void {
  const stream = () => (fd === 1 ? process.stdout : process.stderr);
  return (s) => {
    if (!writesToFile(fd)) {
      stream().write(s);
      return;
    }
    const buf = Buffer.from(s, 'utf8');
    let off = 0;
    try {
      while (off < buf.length) off += writeSync(fd, buf, off, buf.length - off);
    } catch {
      // what is left goes through Node's stream from now on, which meets the error as it always did
      direct[fd] = false;
      stream().write(buf.subarray(off));
    }
  };
}

export const processIo: Io = {
  out: writer(1),
  err: writer(2),
  get isTTY() {
    return !writesToFile(2) && !!process.stderr.isTTY;
  },
};

/** An Io that records everything, for tests. */
export function bufferIo(): Io & { stdout: string; stderr: string } {
  const io = {
    stdout: '',
    stderr: '',
    isTTY: false,
    out(s: string) {
      io.stdout += s;
    },
    err(s: string) {
      io.stderr += s;
    },
  };
  return io;
}

/**
 * `--log-format json`: every line written to stderr becomes one JSON object (a line that already
 * is one passes as it is), so scripts can parse stderr whole. `berth: warning: …` lines are
 * level `warn`, other `berth: …` lines `error`, the rest (progress, spec error listings) `info`.
 */
export function jsonLinesIo(io: Io): Io {
  let partial = '';
  const line = (text: string): string => {
    const t = text.split('\x1b[K').join('').replace(/\r/g, '');
    if (/^\{.*\}$/.test(t)) {
      try {
        JSON.parse(t);
        return t;
      } catch {
        // not JSON after all: wrapped below
      }
    }
    const m = /^berth: (warning: )?(.*)$/s.exec(t);
    const level = m ? (m[1] ? 'warn' : 'error') : 'info';
    return JSON.stringify({ level, message: m ? m[2] : t, timestamp: new Date().toISOString() });
  };
  return {
    out: (s) => io.out(s),
    isTTY: io.isTTY,
    err(s) {
      // One `berth:` message written at once (a usage error with its caret line) stays one object.
      if (!partial && s.startsWith('berth: ') && s.endsWith('\n') && s.indexOf('\n') < s.length - 1) {
        io.err(line(s.slice(0, -1)) + '\n');
        return;
      }
      const parts = (partial + s).split('\n');
      partial = parts.pop() ?? '';
      const lines = parts.filter((p) => p.trim() !== '').map(line);
      if (lines.length) io.err(lines.join('\n') + '\n');
    },
  };
}

/** Whether argv asks for `--log-format json` (decided before the parse, so usage errors follow it too). */
export function wantsJsonLogs(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): boolean {
  for (let i = argv.length - 1; i >= 0; i--) {
    const a = argv[i] as string;
    if (a === '--log-format') return argv[i + 1] === 'json';
    if (a.startsWith('--log-format=')) return a.slice('--log-format='.length) === 'json';
  }
  return env.BERTH_LOG_FORMAT === 'json';
}
