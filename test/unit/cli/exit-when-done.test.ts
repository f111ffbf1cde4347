/** cli/exit-when-done.ts: a short command ends at once when nothing is left to do, and only then (start-up, issue 55). */
import { expect } from 'chai';
import { transformSync } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const SOURCE = path.resolve(__dirname, '..', '..', '..', 'src', 'cli', 'exit-when-done.ts');
/** The module as JavaScript, run by a plain Node (tsx's compiler is a process of its own: a handle in the loop). */
let MODULE = '';

/**
 * Runs `body` in a new Node with exitWhenDone in scope, its stdout and stderr files (a pipe is a
 * handle in the event loop, and exitWhenDone leaves such a process to end as Node ends it); its
 * exit code, stdout and stderr.
 */
function run(body: string): { code: number | null; out: string; err: string } {
  const script = `const { exitWhenDone } = require(${JSON.stringify(MODULE)});
process.on('exit', (c) => process.stdout.write('exit listener ' + c + '\\n'));
${body}`;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'berth-exit-'));
  try {
    const [out, err] = ['out', 'err'].map((n) => openSync(path.join(dir, n), 'w'));
    const r = spawnSync(process.execPath, ['-e', script], { stdio: ['ignore', out, err], timeout: 20_000 });
    for (const fd of [out, err]) closeSync(fd as number);
    return { code: r.status, out: readFileSync(path.join(dir, 'out'), 'utf8'), err: readFileSync(path.join(dir, 'err'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('cli: exitWhenDone', function () {
  this.timeout(30_000);
  let dir: string;
  before(function () {
    dir = mkdtempSync(path.join(os.tmpdir(), 'berth-exit-module-'));
    MODULE = path.join(dir, 'exit-when-done.cjs');
    writeFileSync(MODULE, transformSync(readFileSync(SOURCE, 'utf8'), { loader: 'ts', format: 'cjs' }).code);
  });
  after(function () {
    rmSync(dir, { recursive: true, force: true });
  });

  it("ends the process with the command's code, its 'exit' listeners run, when nothing is left", function () {
    // a 'beforeExit' listener added after the call: Node's own end would emit it, process.exit does not
    const r = run(
      `process.exitCode = 3; exitWhenDone(3); process.on('beforeExit', () => process.stdout.write('before\\n')); process.stdout.write('after\\n');`,
    );
    expect([r.code, r.out, r.err]).to.deep.equal([3, 'after\nexit listener 3\n', '']);
  });

  it('leaves a process with a handle in the event loop (stdout a pipe) to end as Node ends it', function () {
    const script = `require(${JSON.stringify(MODULE)}).exitWhenDone(0); process.stdout.write('x'); process.on('beforeExit', () => process.stdout.write(' before'));`;
    const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 20_000 });
    expect([r.status, r.stdout]).to.deep.equal([0, 'x before']);
  });

  it('leaves a process with work left to it (a timer) to end as Node ends it', function () {
    const r = run(`process.exitCode = 0; setTimeout(() => process.stdout.write('timer\\n'), 30); exitWhenDone(0);`);
    expect([r.code, r.out]).to.deep.equal([0, 'timer\nexit listener 0\n']);
  });

  it("leaves a process with a 'beforeExit' listener to end as Node ends it", function () {
    const r = run(`process.on('beforeExit', () => process.stdout.write('before\\n')); exitWhenDone(0);`);
    expect([r.code, r.out]).to.deep.equal([0, 'before\nexit listener 0\n']);
  });

  it('a rejection nothing handled ends the process as Node would (exit 1, its error on stderr), before the probe', function () {
    const r = run(`process.exitCode = 0; Promise.reject(new Error('lost rejection')); exitWhenDone(0);`);
    expect(r.code).to.equal(1);
    expect(r.err).to.include('lost rejection');
    expect(r.out).to.equal('exit listener 1\n');
  });

  it('a rejection handled later in the same turn is no failure', function () {
    const r = run(`const p = Promise.reject(new Error('handled')); exitWhenDone(0); p.catch(() => process.stdout.write('caught\\n'));`);
    expect([r.code, r.out, r.err]).to.deep.equal([0, 'caught\nexit listener 0\n', '']);
  });
});
