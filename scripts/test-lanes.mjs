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
// either lane failed; the last lines say how each went. First, mocha's dry runs check that every
// test is in exactly one lane; `--check` stops there.
import { spawn } from 'node:child_process';
import { createWriteStream, promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const base = process.env.BERTH_TEST_RUN || `t${Date.now().toString(36)}`;
const mocha = path.join(root, 'node_modules', 'mocha', 'bin', 'mocha.js');
const lines = (process.env.NODE_LINES || '22 24 26').split(/\s+/).filter(Boolean);
const children = new Set();

/** This process's environment with `env` added, a variable given as undefined left out. */
function envWith(env) {
  const full = { ...process.env, ...env };
  for (const [k, v] of Object.entries(full)) if (v === undefined) delete full[k];
  return full;
}

/** Runs `cmd args` in envWith(`env`); its output to `out` (a stream) or inherited. Resolves with its exit code. */
function run(cmd, args, env, out) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: root, env: envWith(env), stdio: out ? ['ignore', 'pipe', 'pipe'] : 'inherit' });
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

/** The tests a lane (or, with none, the whole suite) holds, by file and full title: mocha's dry run. */
function listed(lane) {
  return new Promise((resolve, reject) => {
    const env = envWith({ NODE_V8_COVERAGE: undefined, BERTH_TEST_LANE: lane });
    const child = spawn(process.execPath, [mocha, '--dry-run', '--reporter', 'json'], { cwd: root, env, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    child.on('error', reject);
    child.on('close', (code) => {
      try {
        if (code !== 0) throw new Error(`exit ${code}`);
        resolve(JSON.parse(out).passes.map((t) => `${path.relative(root, t.file)}: ${t.fullTitle}`));
      } catch (err) {
        reject(new Error(`mocha --dry-run${lane ? ` (lane ${lane})` : ''}: ${err.message}`));
      }
    });
  });
}

// Every test is in exactly one lane (a glob that matches nothing would leave tests out unseen).
const [every, inMain, inSide] = await Promise.all([listed(undefined), listed('main'), listed('side')]);
const count = (titles) => titles.reduce((m, t) => m.set(t, (m.get(t) ?? 0) + 1), new Map());
const [want, got] = [count(every), count([...inMain, ...inSide])];
const astray = [...new Set([...want.keys(), ...got.keys()])].filter((t) => want.get(t) !== got.get(t));
if (astray.length) {
  process.stderr.write(`test lanes: ${astray.length} tests are in no lane, or in both (.mocharc.cjs):\n${astray.slice(0, 20).join('\n')}\n`);
  process.exit(1);
}
if (process.argv.includes('--check')) {
  process.stdout.write(`test lanes: main ${inMain.length} tests, side ${inSide.length}, all ${every.length}: each in one lane\n`);
  process.exit(0);
}

const logDir = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-test-lanes-'));
const sideLog = path.join(logDir, 'side.log');
const sideOut = createWriteStream(sideLog);
const started = Date.now();

const side = (async () => {
  const tests = await run(process.execPath, [mocha], { BERTH_TEST_LANE: 'side', BERTH_TEST_RUN: `${base}s` }, sideOut);
  // the other lines of Node.js run the unit tests only, outside the coverage of this one
  const other = await run(path.join(root, 'scripts', 'test-lines.sh'), lines, { NODE_V8_COVERAGE: undefined }, sideOut);
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
process.stdout.write(`lane main: ${inMain.length} tests, exit ${main} in ${min(mainMs)}\n`);
process.stdout.write(`lane side: ${inSide.length} tests, exit ${s.tests}, other Node lines exit ${s.other}, in ${min(s.ms)} (${closing(log).join('; ')})\n`);
process.exit(main === 0 && s.tests === 0 && s.other === 0 ? 0 : 1);
