'use strict';
// mocha's spec reporter, plus, at the very end:
// - where the time went: the sum of the tests' own durations, and the files that took longest
//   (each file's wall time, its before/after hooks included; the root hooks' on their own line);
// - the titles of the failed tests (one line each, so CI's tail shows them);
// - one plain closing line `mocha: N passed, N failed, N skipped` that CI and
//   scripts/test-lanes.mjs read. A skipped test is counted and shown (forbidPending fails it).
// BERTH_TEST_TIMES=FILE also writes every file's and every test's time there as JSON
// and the failed tests' titles (scripts/test-lanes.mjs reads it for the run's closing lines).
const fs = require('node:fs');
const path = require('node:path');
const Mocha = require('mocha');
const { EVENT_RUN_END, EVENT_TEST_FAIL, EVENT_SUITE_BEGIN, EVENT_SUITE_END, EVENT_HOOK_BEGIN, EVENT_HOOK_END, EVENT_TEST_END } = Mocha.Runner.constants;

/** How many of the slowest files the closing lines name. */
const SLOWEST = 12;

const sec = (ms) => `${(ms / 1000).toFixed(1)} s`;

class BerthReporter extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    const failed = [];
    const started = Date.now();
    /** file -> wall ms of its top-level suites */
    const files = new Map();
    const tests = [];
    const open = new Map();
    let rootHooksMs = 0;
    let hookStarted = 0;
    const fileOf = (s) => path.relative(process.cwd(), s.file || '(no file)');
    runner.on(EVENT_SUITE_BEGIN, (suite) => {
      if (suite.parent && suite.parent.root) open.set(suite, Date.now());
    });
    runner.on(EVENT_SUITE_END, (suite) => {
      const t = open.get(suite);
      if (t === undefined) return;
      open.delete(suite);
      const f = fileOf(suite);
      files.set(f, (files.get(f) || 0) + Date.now() - t);
    });
    runner.on(EVENT_HOOK_BEGIN, (hook) => {
      if (hook.parent && hook.parent.root) hookStarted = Date.now();
    });
    runner.on(EVENT_HOOK_END, (hook) => {
      if (hook.parent && hook.parent.root) rootHooksMs += Date.now() - hookStarted;
    });
    runner.on(EVENT_TEST_END, (test) => {
      tests.push({ file: fileOf(test), title: test.fullTitle(), ms: test.duration || 0 });
    });
    runner.on(EVENT_TEST_FAIL, (test, err) => {
      const why = String((err && err.message) || err)
        .split('\n')[0]
        .slice(0, 200);
      failed.push(`${test.fullTitle()}: ${why}`);
    });
    runner.once(EVENT_RUN_END, () => {
      const s = runner.stats || {};
      const wall = Date.now() - started;
      const testsMs = tests.reduce((a, t) => a + t.ms, 0);
      const byFile = [...files].sort((a, b) => b[1] - a[1]);
      const root = rootHooksMs > 0 ? `; the root hooks (the leak check) ${sec(rootHooksMs)}` : '';
      process.stdout.write(`\ntime: ${sec(wall)} in all; the tests' own durations sum to ${sec(testsMs)}${root}\n`);
      process.stdout.write(`slowest files (wall time, hooks included):\n`);
      for (const [f, ms] of byFile.slice(0, SLOWEST)) process.stdout.write(`  ${sec(ms).padStart(8)}  ${f}\n`);
      if (process.env.BERTH_TEST_TIMES) {
        const stats = { passed: s.passes || 0, failed: s.failures || 0, skipped: s.pending || 0 };
        const doc = { wallMs: wall, testsMs, rootHooksMs, stats, files: Object.fromEntries(byFile), tests, failed };
        fs.writeFileSync(process.env.BERTH_TEST_TIMES, JSON.stringify(doc));
      }
      if (failed.length > 0) {
        process.stdout.write(`\nfailed tests (${failed.length}):\n`);
        for (const f of failed) process.stdout.write(`  ✖ ${f}\n`);
      }
      process.stdout.write(`\nmocha: ${s.passes || 0} passed, ${s.failures || 0} failed, ${s.pending || 0} skipped\n`);
    });
  }
}
module.exports = BerthReporter;
