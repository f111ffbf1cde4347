#!/usr/bin/env node
'use strict';
// Thin launcher: the compiled CLI lives in dist/ (npm run build, or make setup).
require('./node-check')(require('path').resolve(__dirname, '..'));
try {
  require('../dist/cli/index.js').main(process.argv);
} catch (err) {
  if (err && err.code === 'MODULE_NOT_FOUND' && String(err.message).includes('dist/cli/index.js')) {
    process.stderr.write('berth: not built yet; run `make setup` (or `npm run build`) first\n');
    process.exit(1);
  }
  throw err;
}
