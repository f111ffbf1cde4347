#!/usr/bin/env node
// The whole test run in two lanes at once (the README's `make test` runs this under c8), each
// about as long as the other (.mocharc.cjs says which tests each holds):
// - main: the unit tests and most engine tests, its output shown as it comes;
// - side: the tests on engines of their own (the test swarm, private engines in network
//   namespaces of their own), git, the browser and the packaging, then the unit tests on the
//   other maintained lines of Node.js (scripts/test-lines.sh); its output kept in a file and
//   shown once the main lane is done.
// Each lane is its own test run (BERTH_TEST_RUN: its own labels, instances, cache, engines and
// namespaces), so each finds and removes only its own leftovers. The exit code is non-zero when
// either lane failed; the last lines say how each went.
import { spawn } from 'node:child_process';
import { createWriteStream, promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const base = process.env.BERTH_TEST_RUN || `t${Date.now().toString(36)}`;
const mocha = path.join(root, 'node_modules', 'mocha', 'bin', 'mocha.js');
const lines = (process.env.NODE_LINES || '22 24 26').split(/\s+/).filter(Boolean);
const children = new Set();

/** Runs `cmd args` with `env` added; its output to `out` (a stream) or inherited. Resolves with its exit code. */
function run(cmd, args, env, out) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: root, env: { ...process.env, ...env }, stdio: out ? ['ignore', 'pipe', 'pipe'] : 'inherit' });
    children.add(child);
    if (out) {
      child.stdout.pipe(out, { end: false });
      child.stderr.pipe(out, { end: false });
    }
    child.on('error', (err) => {
      out?.write(`${cmd}: ${err.message}\n`);
      children.delete(child);
      resolve(127);
    });
    child.on('close', (code, signal) => {
      children.delete(child);
      resolve(code ?? (signal ? 128 + (os.constants.signals[signal] ?? 0) : 1));
    });
  });
}

for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    for (const c of children) c.kill(sig);
  });
}

const logDir = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-test-lanes-'));
const sideLog = path.join(logDir, 'side.log');
const sideOut = createWriteStream(sideLog);
const started = Date.now();

const side = (async () => {
  const tests = await run(process.execPath, [mocha], { BERTH_TEST_LANE: 'side', BERTH_TEST_RUN: `${base}s` }, sideOut);
  // the other lines of Node.js run the unit tests only, outside the coverage of this one
  const other = await run(path.join(root, 'scripts', 'test-lines.sh'), lines, { NODE_V8_COVERAGE: '' }, sideOut);
  return { tests, other, ms: Date.now() - started };
})();
const main = await run(process.execPath, [mocha], { BERTH_TEST_LANE: 'main', BERTH_TEST_RUN: `${base}m` });
const mainMs = Date.now() - started;
const s = await side;
await new Promise((resolve) => sideOut.end(resolve));

const log = await fs.readFile(sideLog, 'utf8');
process.stdout.write(`\n==== lane side (engines of their own, git, the browser, packaging), then the unit tests on Node ${lines.join(', ')} ====\n`);
process.stdout.write(log);
await fs.rm(logDir, { recursive: true, force: true });

const min = (ms) => `${(ms / 60000).toFixed(1)} min`;
const closing = (text) => [...text.matchAll(/^mocha: .*$/gm)].map((m) => m[0]);
process.stdout.write('\n');
process.stdout.write(`lane main: exit ${main} in ${min(mainMs)}\n`);
process.stdout.write(`lane side: exit ${s.tests}, other Node lines exit ${s.other}, in ${min(s.ms)} (${closing(log).join('; ')})\n`);
process.exit(main === 0 && s.tests === 0 && s.other === 0 ? 0 : 1);
