/**
 * Start-up (issue 55): stdout and stderr that are files (or /dev/null) are written with
 * fs.writeSync, as Node's own stream for a file writes them, without making process.stdout or
 * process.stderr (src/cli/io.ts); a pipe gets Node's stream as before. The same bytes either way.
 * io.ts runs compiled by esbuild in a plain node (tsx makes both streams itself).
 */
import { expect } from 'chai';
import { transformSync } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const REPO = path.resolve(__dirname, '..', '..', '..');
let ioJs = '';

/** Writes through processIo in a new process; its stdout and stderr go to `out` and `err` (files, or 'pipe'). */
function write(out: number | 'pipe', err: number | 'pipe', report: string): { stdout: string; stderr: string; made: string[] } {
  const script = `
const { processIo } = require(${JSON.stringify(ioJs)});
processIo.out('caf\\u00e9 one\\n'); processIo.err('warning: two\\n'); processIo.out('x'.repeat(200000) + '\\n');
const tty = processIo.isTTY;
require('fs').writeFileSync(${JSON.stringify(report)}, JSON.stringify({ tty, made: process.moduleLoadList.filter((m) => /sync_write_stream|pipe_wrap|tty_wrap/.test(m)) }));`;
  const r = spawnSync(process.execPath, ['-e', script], { stdio: ['ignore', out, err], encoding: 'utf8', timeout: 60_000 });
  expect(r.status, r.stderr ?? '').to.equal(0);
  const rep = JSON.parse(readFileSync(report, 'utf8')) as { tty: boolean; made: string[] };
  expect(rep.tty).to.equal(false);
  return { stdout: r.stdout ?? '', stderr: r.stderr ?? '', made: rep.made };
}

describe('cli/io: stdout and stderr that are files are written without a stream (issue 55)', function () {
  this.timeout(120_000);
  let dir: string;
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'berth-io-'));
    ioJs = path.join(dir, 'io.cjs');
    writeFileSync(ioJs, transformSync(readFileSync(path.join(REPO, 'src', 'cli', 'io.ts'), 'utf8'), { loader: 'ts', format: 'cjs' }).code);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const expected = `caf\u00e9 one\n${'x'.repeat(200000)}\n`;

  it('files: the same bytes, and neither stream made', () => {
    const o = openSync(path.join(dir, 'out'), 'w');
    const e = openSync(path.join(dir, 'err'), 'w');
    try {
      const r = write(o, e, path.join(dir, 'report-files'));
      expect(r.made).to.deep.equal([]);
    } finally {
      closeSync(o);
      closeSync(e);
    }
    expect(readFileSync(path.join(dir, 'out'), 'utf8')).to.equal(expected);
    expect(readFileSync(path.join(dir, 'err'), 'utf8')).to.equal('warning: two\n');
  });

  it('/dev/null: no stream made', () => {
    const n = openSync('/dev/null', 'w');
    try {
      expect(write(n, n, path.join(dir, 'report-null')).made).to.deep.equal([]);
    } finally {
      closeSync(n);
    }
  });

  it("pipes: Node's stream, as before, with the same bytes", () => {
    const r = write('pipe', 'pipe', path.join(dir, 'report-pipes'));
    expect(r.made.some((m) => /pipe_wrap/.test(m))).to.equal(true);
    expect(r.stdout).to.equal(expected);
    expect(r.stderr).to.equal('warning: two\n');
  });
});
