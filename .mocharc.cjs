// All tests: pure unit tests (test/unit) and real-engine tests (test/engine).
// BERTH_TEST_LANE picks a part (scripts/test-lanes.mjs runs both at once, about equally long):
// `side` is the tests on engines of their own (the test swarm, private engines), git, the
// browser and the packaging; `main` is everything else.
process.env.BERTH_TEST_RUN ||= `t${Date.now().toString(36)}`;
const side = [
  'test/engine/swarm/**/*.test.ts',
  'test/engine/git-*.test.ts',
  // named one by one: mocha's spec does not expand braces (its ignore does)
  ...['disk-btrfs', 'disk-xfs', 'dns', 'engine-restart', 'engines', 'infra', 'packaging', 'report-browser'].map((f) => `test/engine/${f}.test.ts`),
];
const all = ['test/unit/**/*.test.ts', 'test/engine/**/*.test.ts'];
const lanes = { main: { spec: all, ignore: side }, side: { spec: side, ignore: [] } };
const lane = process.env.BERTH_TEST_LANE;
if (lane && !lanes[lane]) throw new Error(`BERTH_TEST_LANE=${lane}: not one of ${Object.keys(lanes).join(', ')}`);
module.exports = {
  require: ['tsx/cjs', './test/hooks.ts'],
  spec: lane ? lanes[lane].spec : all,
  ignore: lane ? lanes[lane].ignore : [],
  reporter: './test/reporter.cjs',
  timeout: 30000,
  slow: 2000,
  forbidOnly: true,
  // a pending test (it() without a body, .skip, this.skip()) fails the run: the suite skips none
  forbidPending: true,
  failZero: true,
  // A test that times out can leave work running in this process (a controller, a stream);
  // end the run with its report instead of waiting on them forever.
  exit: true,
};
