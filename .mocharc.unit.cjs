// Pure tests only: no engine needed (the lane `unit` of .mocharc.cjs).
module.exports = { ...require('./.mocharc.cjs'), spec: ['test/unit/**/*.test.ts'], ignore: [], require: ['tsx/cjs', './test/cache-dir.ts'] };
