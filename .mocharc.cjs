// All tests: pure unit tests (test/unit) and real-engine tests (test/engine).
process.env.BERTH_TEST_RUN ||= `t${Date.now().toString(36)}`;
module.exports = {
  require: ['tsx/cjs', './test/hooks.ts'],
  spec: ['test/unit/**/*.test.ts', 'test/engine/**/*.test.ts'],
  reporter: './test/reporter.cjs',
  timeout: 30000,
  slow: 2000,
  forbidOnly: true,
  failZero: true,
  // A test that times out can leave work running in this process (a controller, a stream);
  // end the run with its report instead of waiting on them forever.
  exit: true,
};
