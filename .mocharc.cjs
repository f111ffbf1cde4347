// All tests: pure unit tests (test/unit) and real-engine tests (test/engine).
// BERTH_TEST_LANE picks a part (scripts/test-lanes.mjs runs both at once): `main` is all but the
// swarm tests, `swarm` the tests on the test swarm (test/engine/swarm).
process.env.BERTH_TEST_RUN ||= `t${Date.now().toString(36)}`;
const lanes = {
  main: ['test/unit/**/*.test.ts', 'test/engine/*.test.ts'],
  swarm: ['test/engine/swarm/**/*.test.ts'],
};
const lane = process.env.BERTH_TEST_LANE;
if (lane && !lanes[lane]) throw new Error(`BERTH_TEST_LANE=${lane}: not one of ${Object.keys(lanes).join(', ')}`);
module.exports = {
  require: ['tsx/cjs', './test/hooks.ts'],
  spec: lane ? lanes[lane] : [...lanes.main, ...lanes.swarm],
  reporter: './test/reporter.cjs',
  timeout: 30000,
  slow: 2000,
  forbidOnly: true,
  failZero: true,
  // A test that times out can leave work running in this process (a controller, a stream);
  // end the run with its report instead of waiting on them forever.
  exit: true,
};
