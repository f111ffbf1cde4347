#!/usr/bin/env node
'use strict';
// Thin launcher. Start-up is part of every command's cost (issue 55): the split build,
// dist/split/berth.cjs (scripts/build-cli.ts; `npm run build` writes it too: the command line in
// one file, the engine client in a second read only when a command first asks for an engine, the
// YAML parser and the validators in a third read only when a file is parsed, the logger in a
// fourth read when a line is logged),
// else the single-file build dist/berth.cjs, runs when it is at least as new as the compiled files
// under dist/cli (one file read instead of a hundred found, read and compiled), with V8's code
// cache of the same command's last run (compile-cache.js). A build by tsc alone leaves dist/cli
// newer: that runs, with Node's module compile cache.
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

var split = path.join(repo, 'dist', 'split', 'berth.cjs');
var bundle = path.join(repo, 'dist', 'berth.cjs');
var index = path.join(repo, 'dist', 'cli', 'index.js');
var s = mtime(split);
var b = mtime(bundle);
var built = mtime(index);
if (s >= 0 && s >= built) {
  // The split build: a file of the command's own when it has one (and the command line names that
  // command as berth reads argv: its handles()), else every command's; either reads its engine
  // file only when the command asks for an engine.
  var commands = require('./commands');
  var word = cache.commandOf(process.argv, commands);
  var own = path.join(repo, 'dist', 'split', word + '.cjs');
  var cli;
  if (word !== 'other' && mtime(own) >= built) {
    cli = cache.runBundle(own, process.env, process.argv, commands, 'bundle.' + word);
    if (!cli.handles(process.argv)) cli = undefined;
  }
  if (!cli) cli = cache.runBundle(split, process.env, process.argv, commands);
  // the engine file and the leaf files (parse.cjs, log.cjs), through the code cache too
  cli.setChunkLoader(function (file, name) {
    return cache.runBundle(file, process.env, process.argv, commands, 'chunk-' + name);
  });
  cli.main(process.argv);
} else if (b >= 0 && b >= built) {
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
