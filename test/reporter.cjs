'use strict';
// mocha's spec reporter, plus one plain closing line `mocha: N passed, N failed, N skipped`
// that CI reads. A skipped test is counted and shown: the suite is expected to skip none.
const Mocha = require('mocha');
const { EVENT_RUN_END } = Mocha.Runner.constants;

class BerthReporter extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    runner.once(EVENT_RUN_END, () => {
      const s = runner.stats || {};
      process.stdout.write(`\nmocha: ${s.passes || 0} passed, ${s.failures || 0} failed, ${s.pending || 0} skipped\n`);
    });
  }
}
module.exports = BerthReporter;
