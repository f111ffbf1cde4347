#!/usr/bin/env node
// The whole test run (the README's `make test` runs this under c8), as jobs on three slots at
// once (BERTH_TEST_SLOTS changes it), each job taking the first free slot in this order:
// - main: most engine tests, its output shown as it comes;
// - side: the engine tests on engines of their own (the test swarm, private engines in network
//   namespaces of their own), git, the browser and the packaging (.mocharc.cjs says which tests
//   each lane holds; main and side about equally long);
// - unit: the pure tests, on this Node (under coverage, as the lanes);
// - the pure tests on each other maintained line of Node.js (NODE_LINES, installed by
//   `make deps`: scripts/node-up.sh --lines), a job each, outside the coverage.
// The third slot is the pure tests': they mostly wait on their timers (about 13 s of CPU in a
// minute), so they cost the two engine lanes little, and neither lane waits for them.
// The output of every job but main is kept in a file and shown once main is done (and that job
// too). Each lane is its own test run (BERTH_TEST_RUN: its own labels, instances, cache, engines
// and namespaces), so each finds and removes only its own leftovers. The exit code is non-zero
// when any job failed; the last lines give each job's wall time, the sum of its tests' own
// durations, its slowest files and its failed tests (test/reporter.cjs), and the run's total.
//
// BERTH_TEST_DEADLINE (seconds since the epoch; .ci/run sets it below CI's hard limit): at that
// time every job still running is ended (SIGTERM: a lane removes what it made, as at its end;
// then SIGKILL to what is left of its process group), and what each job printed is shown all the
// same, with the jobs cut and those never started named. SIGINT and SIGTERM to this process do
// the same at once.
//
// First, mocha's dry runs check that every test is in exactly one lane; `--check` stops there.
import { execFileSync, spawn } from 'node:child_process';
import { createWriteStream, promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const base = process.env.BERTH_TEST_RUN || `t${Date.now().toString(36)}`;
const mocha = path.join(root, 'node_modules', 'mocha', 'bin', 'mocha.js');
const lines = (process.env.NODE_LINES || '22 24 26').split(/\s+/).filter(Boolean);
const slots = Math.max(1, Number(process.env.BERTH_TEST_SLOTS || 3));
const deadline = process.env.BERTH_TEST_DEADLINE ? Number(process.env.BERTH_TEST_DEADLINE) * 1000 : undefined;
/** When `make test` started (the Makefile passes it): setup, typecheck, lint and build came before this script. */
const makeStarted = process.env.BERTH_MAKE_T0 ? Number(process.env.BERTH_MAKE_T0) * 1000 : undefined;
const started = Date.now();
const KILL_AFTER_MS = 90_000;

/** This process's environment with `env` added, a variable given as undefined left out. */
function envWith(env) {
  const full = { ...process.env, ...env };
  for (const [k, v] of Object.entries(full)) if (v === undefined) delete full[k];
  return full;
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
const [every, inMain, inSide, inUnit] = await Promise.all([listed(undefined), listed('main'), listed('side'), listed('unit')]);
const count = (titles) => titles.reduce((m, t) => m.set(t, (m.get(t) ?? 0) + 1), new Map());
const [want, got] = [count(every), count([...inMain, ...inSide, ...inUnit])];
const astray = [...new Set([...want.keys(), ...got.keys()])].filter((t) => want.get(t) !== got.get(t));
if (astray.length) {
  process.stderr.write(`test lanes: ${astray.length} tests are in no lane, or in both (.mocharc.cjs):\n${astray.slice(0, 20).join('\n')}\n`);
  process.exit(1);
}
if (process.argv.includes('--check')) {
  process.stdout.write(`test lanes: main ${inMain.length} tests, side ${inSide.length}, unit ${inUnit.length}, all ${every.length}: each in one lane\n`);
  process.exit(0);
}

// The other lines of Node.js are installed by `make deps`; nothing is downloaded here.
const mine = process.versions.node.split('.')[0];
const others = [];
for (const line of lines.filter((l) => l !== mine)) {
  try {
    others.push({ line, bin: execFileSync(path.join(root, 'scripts', 'node-up.sh'), ['--bin', line], { encoding: 'utf8' }).trim() });
  } catch {
    process.stderr.write(`test lanes: Node ${line} is not installed (NODE_LINES=${lines.join(' ')}): \`make deps\` installs it\n`);
    process.exit(1);
  }
}

const logDir = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-test-lanes-'));
/** @type {{name: string, title: string, cmd: string, args: string[], env: object, live?: boolean, tests?: number}[]} (tests: how many the dry run counted) */
const jobs = [
  {
    name: 'main',
    title: 'lane main (most engine tests)',
    cmd: process.execPath,
    args: [mocha],
    env: { BERTH_TEST_LANE: 'main', BERTH_TEST_RUN: `${base}m` },
    live: true,
    tests: inMain.length,
  },
  {
    name: 'side',
    title: 'lane side (engines of their own, git, the browser, packaging)',
    cmd: process.execPath,
    args: [mocha],
    env: { BERTH_TEST_LANE: 'side', BERTH_TEST_RUN: `${base}s` },
    tests: inSide.length,
  },
  {
    name: 'unit',
    title: `lane unit (the pure tests, on Node ${mine}, under coverage)`,
    cmd: process.execPath,
    args: [mocha],
    env: { BERTH_TEST_LANE: 'unit', BERTH_TEST_RUN: `${base}u` },
    tests: inUnit.length,
  },
  ...others.map(({ line, bin }) => ({
    name: `node${line}`,
    title: `the unit tests on Node ${line}`,
    cmd: bin,
    args: [mocha, '--config', '.mocharc.unit.cjs'],
    env: { NODE_V8_COVERAGE: undefined },
  })),
];
for (const j of jobs) {
  j.times = path.join(logDir, `${j.name}.times.json`);
  j.log = path.join(logDir, `${j.name}.log`);
}

const running = new Set();
let cut = '';

/** Sends `sig` to the job's process group (what its tests started too), if it is still there. */
function signalGroup(j, sig) {
  try {
    process.kill(-j.child.pid, sig);
  } catch {
    // gone
  }
}

/**
 * Ends every job still running: SIGTERM to its mocha (a lane cleans up what it made, as at its
 * end: test/hooks.ts), then SIGKILL to what is left of its process group once it has ended, or
 * KILL_AFTER_MS later.
 */
function cutAll(why) {
  if (cut) return;
  cut = why;
  process.stderr.write(`\ntest lanes: ${why}: ending ${[...running].map((j) => j.name).join(', ') || 'nothing'}\n`);
  for (const j of running) {
    j.cut = true;
    j.child.kill('SIGTERM');
    setTimeout(() => signalGroup(j, 'SIGKILL'), KILL_AFTER_MS).unref();
  }
}
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => cutAll(`${sig}`));
if (deadline !== undefined) {
  const ms = deadline - Date.now();
  const at = new Date(deadline).toISOString();
  if (ms <= 0) cutAll(`the time limit (BERTH_TEST_DEADLINE, ${at}) has passed`);
  else setTimeout(() => cutAll(`the time limit (BERTH_TEST_DEADLINE, ${at}) is reached`), ms).unref();
}

/** Runs one job in a process group of its own; its output inherited (main) or kept in its log. Resolves when it has ended. */
function start(j) {
  return new Promise((resolve) => {
    const out = j.live ? undefined : createWriteStream(j.log);
    j.started = Date.now();
    const child = spawn(j.cmd, j.args, {
      cwd: root,
      env: envWith({ ...j.env, BERTH_TEST_TIMES: j.times }),
      stdio: out ? ['ignore', 'pipe', 'pipe'] : ['ignore', 'inherit', 'inherit'],
      detached: true,
    });
    j.child = child;
    running.add(j);
    if (out) {
      child.stdout.pipe(out, { end: false });
      child.stderr.pipe(out, { end: false });
    }
    const done = (code) => {
      if (j.cut) signalGroup(j, 'SIGKILL');
      running.delete(j);
      j.code = code;
      j.ms = Date.now() - j.started;
      if (out) out.end(resolve);
      else resolve();
    };
    child.on('error', (err) => {
      out?.write(`${j.cmd}: ${err.message}\n`);
      done(127);
    });
    child.on('close', (code, signal) => done(code ?? (signal ? 128 + (os.constants.signals[signal] ?? 0) : 1)));
  });
}

// The slots take the jobs in order. A job's kept log is shown once main is done and it is too.
const queue = [...jobs];
let mainDone = false;
const shown = new Set();
async function show(j) {
  if (j.live || shown.has(j) || !mainDone || j.code === undefined) return;
  shown.add(j);
  const log = await fs.readFile(j.log, 'utf8').catch(() => '');
  process.stdout.write(`\n==== ${j.title}: its output ====\n${log}`);
}
async function slot() {
  for (let j = queue.shift(); j && !cut; j = queue.shift()) {
    await start(j);
    if (j.live) mainDone = true;
    for (const k of jobs) await show(k);
  }
}
await Promise.all(Array.from({ length: slots }, slot));
mainDone = true;
// a cut run: what the jobs that were running printed up to then
for (const j of jobs) if (j.started !== undefined) await show(j);

const min = (ms) => `${(ms / 60000).toFixed(1)} min`;
const times = async (j) => JSON.parse(await fs.readFile(j.times, 'utf8').catch(() => 'null'));

process.stdout.write(`\n==== the run's timing ====\n`);
for (const j of jobs) {
  if (j.started === undefined) {
    process.stdout.write(`${j.name}: never started (${cut})\n`);
    continue;
  }
  const t = await times(j);
  const sums = t ? `, its tests' own durations ${min(t.testsMs)}` : '';
  const end = t ? ` (${t.stats.passed} passed, ${t.stats.failed} failed, ${t.stats.skipped} skipped)` : ' (no report: it did not end by itself)';
  process.stdout.write(`${j.name}: exit ${j.code} in ${min(j.ms)}${sums}, from ${min(j.started - started)} to ${min(j.started - started + j.ms)}${end}\n`);
  if (t && j.tests !== undefined) {
    const slow = Object.entries(t.files)
      .slice(0, 5)
      .map(([f, ms]) => `${path.basename(f, '.test.ts')} ${Math.round(ms / 1000)} s`);
    process.stdout.write(`  slowest files: ${slow.join(', ')}\n`);
  }
  for (const f of t?.failed ?? []) process.stdout.write(`  ✖ ${f}\n`);
}
const total = Date.now() - started;
const before =
  makeStarted !== undefined ? `; make test in all ${min(Date.now() - makeStarted)} (setup, typecheck, lint and build ${min(started - makeStarted)})` : '';
process.stdout.write(`tests: ${min(total)} on ${slots} slots${before}\n`);
if (cut) process.stdout.write(`CUT SHORT: ${cut}; the jobs it ended show exit 143 (or 137: killed)\n`);
await fs.rm(logDir, { recursive: true, force: true });
process.exit(!cut && jobs.every((j) => j.code === 0) ? 0 : 1);
