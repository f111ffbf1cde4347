/** Where a command writes: human output on stdout, diagnostics on stderr. Tests pass their own. */
export interface Io {
  out(s: string): void;
  err(s: string): void;
  /** stderr is a terminal (live progress line). */
  isTTY: boolean;
}

export const processIo: Io = {
  out: (s) => void process.stdout.write(s),
  err: (s) => void process.stderr.write(s),
  isTTY: !!process.stderr.isTTY,
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
