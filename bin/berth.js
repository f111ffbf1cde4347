#!/usr/bin/env node
'use strict';
// Thin launcher. Start-up is part of every command's cost (issue 55): the single-file build,
// dist/berth.cjs (scripts/build-cli.ts; `npm run build` writes it too), runs when it is at least
// as new as the compiled files under dist/cli (one file read instead of a hundred found, read and
// compiled), with V8's code cache of the same command's last run (compile-cache.js). A build by
// tsc alone leaves dist/cli newer: that runs, with Node's module compile cache.
var path = require('path');
var fs = require('fs');
var repo = path.resolve(__dirname, '..');
require('./node-check')(repo);
var cache = require('./compile-cache');

function mtime(file) {
  try {
    return fs.statSync(file).mtimeMs;
  } catch (err) {
    return -1;
  }
}

// `berth --version` alone: the version, without loading berth (what the program says for it).
if (process.argv.length === 3 && (process.argv[2] === '--version' || process.argv[2] === '-V')) {
  process.stdout.write(require('../package.json').version + '\n');
  return;
}

var bundle = path.join(repo, 'dist', 'berth.cjs');
var index = path.join(repo, 'dist', 'cli', 'index.js');
var b = mtime(bundle);
if (b >= 0 && b >= mtime(index)) {
  cache.runBundle(bundle, process.env, process.argv, require('./commands')).main(process.argv);
} else {
  cache.enableModuleCache(process.env);
  try {
    require(index).main(process.argv);
  } catch (err) {
    if (err && err.code === 'MODULE_NOT_FOUND' && String(err.message).includes('dist/cli/index.js')) {
      process.stderr.write('berth: not built yet; run `make setup` (or `npm run build`) first\n');
      process.exit(1);
    }
    throw err;
  }
}
