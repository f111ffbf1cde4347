'use strict';
// berth's commands, for bin/compile-cache.js (one code cache per command). A unit test
// (test/unit/cli/startup.test.ts) checks that it lists the commands src/cli/index.ts registers.
module.exports = [
  'validate',
  'plan',
  'reconcile',
  'get',
  'events',
  'wait',
  'rerun',
  'regrade',
  'delete',
  'images',
  'pull',
  'summary',
  'compare',
  'report',
  'describe',
  'source',
  'logs',
  'exec',
  'cp',
  'release',
  'clean',
  'unlock',
  'version',
  'completion',
];
