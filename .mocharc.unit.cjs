// Pure tests only: no engine needed.
module.exports = { ...require('./.mocharc.cjs'), spec: ['test/unit/**/*.test.ts'], require: ['tsx/cjs', './test/cache-dir.ts'] };
