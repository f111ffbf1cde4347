'use strict';
// mocha's spec reporter, plus, at the very end, the titles of the failed tests (one line each,
// so CI's tail shows them) and one plain closing line `mocha: N passed, N failed, N skipped`
// that CI reads. A skipped test is counted and shown: the suite is expected to skip none.
const Mocha = require('mocha');
const { EVENT_RUN_END, EVENT_TEST_FAIL } = Mocha.Runner.constants;

class BerthReporter extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    const failed = [];
    runner.on(EVENT_TEST_FAIL, (test, err) => {
      const why = String((err && err.message) || err)
        .split('\n')[0]
        .slice(0, 200);
      failed.push(`${test.fullTitle()}: ${why}`);
    });
    runner.once(EVENT_RUN_END, () => {
      const s = runner.stats || {};
      if (failed.length > 0) {
        process.stdout.write(`\nfailed tests (${failed.length}):\n`);
        for (const f of failed) process.stdout.write(`  ✖ ${f}\n`);
      }
      process.stdout.write(`\nmocha: ${s.passes || 0} passed, ${s.failures || 0} failed, ${s.pending || 0} skipped\n`);
    });
  }
}
module.exports = BerthReporter;
