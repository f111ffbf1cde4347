// All tests: pure unit tests (test/unit) and real-engine tests (test/engine).
// BERTH_TEST_LANE picks a part (scripts/test-lanes.mjs runs them at once): `side` is the engine
// tests on engines of their own (the test swarm, private engines), git, the browser, the
// packaging and the Python client (2 min, mostly waiting); `main` the other engine tests (the two
// about equally long); `unit` the pure tests (no engine: only the cache folder's hook, as
// .mocharc.unit.cjs).
process.env.BERTH_TEST_RUN ||= `t${Date.now().toString(36)}`;
const side = [
  'test/engine/swarm/**/*.test.ts',
  'test/engine/git-*.test.ts',
  // named one by one: mocha's spec does not expand braces (its ignore does)
  ...[
    'disk-btrfs',
    'disk-xfs',
    'dns',
    'engine-restart',
    'engines',
    'infra',
    'packaging',
    'python-client',
    'report-browser',
    'report-large',
    'weak-isolation',
  ].map((f) => `test/engine/${f}.test.ts`),
];
const unit = ['test/unit/**/*.test.ts'];
const all = [...unit, 'test/engine/**/*.test.ts'];
const lanes = {
  main: { spec: ['test/engine/**/*.test.ts'], ignore: side },
  side: { spec: side, ignore: [] },
  unit: { spec: unit, ignore: [], require: ['tsx/cjs', './test/cache-dir.ts'] },
};
const lane = process.env.BERTH_TEST_LANE;
if (lane && !lanes[lane]) throw new Error(`BERTH_TEST_LANE=${lane}: not one of ${Object.keys(lanes).join(', ')}`);
module.exports = {
  require: (lane && lanes[lane].require) || ['tsx/cjs', './test/hooks.ts'],
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
