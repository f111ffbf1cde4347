#!/usr/bin/env node
'use strict';
// berth's launcher. Start-up is part of every command's cost (issue 55). It runs the split build
// (dist/split/, scripts/build-cli.ts; `npm run build` writes it: the command line in one file,
// the engine client in a second read only when a command first asks for an engine, the YAML
// parser and the validators in a third read only when a file is parsed, the logger in a fourth
// read when a line is logged), else the single-file build dist/berth.cjs, when it is at least as
// new as the compiled files under dist/cli (one file read instead of a hundred found, read and
// compiled), with V8's code cache of the same command's last run (below). A build by tsc alone
// leaves dist/cli newer: that runs, with Node's module compile cache.
// One file (each module more is found, read and compiled at every start): the version check, the
// commands, the code cache and the launch. Required (tests, bin/berth-src.cjs), it launches
// nothing and gives its functions. In syntax any Node parses (the version check comes first).
var path = require('path');
var fs = require('fs');

// berth needs Node.js >= 22.22 (package.json's `engines`). Checked before anything else loads, in
// syntax any Node parses, so an older Node ends in one line and exit 2, never a stack trace.
// A checkout's own Node (scripts/node-up.sh, run by `make setup`) is .node/bin/node.
// The single-file build (scripts/build-cli.ts) runs this function as its banner.
/** repo: the folder bin/ is in (undefined in the single-file build). */
function checkNode(repo) {
  var MIN = [22, 22];
  var v = process.versions.node.split('.').map(Number);
  if (v[0] > MIN[0] || (v[0] === MIN[0] && v[1] >= MIN[1])) return;
  var path = require('path');
  var fs = require('fs');
  // In a checkout, the project's own Node; elsewhere (the npm package, berth.cjs), any maintained one.
  var checkout = repo && fs.existsSync(path.join(repo, 'scripts', 'node-up.sh'));
  var own = checkout ? path.join(repo, '.node', 'bin', 'node') : '';
  var hint = !checkout ? '; install a maintained release' : fs.existsSync(own) ? '; run it with ' + own : '; `make setup` installs one at ' + own;
  process.stderr.write('berth: needs Node.js >= ' + MIN.join('.') + ', this is ' + process.version + ' (' + process.execPath + ')' + hint + '\n');
  process.exit(2);
}
// end of checkNode (scripts/build-cli.ts runs the function above as the single file's banner)

// berth's commands (one code cache each). A unit test (test/unit/cli/startup.test.ts) checks that
// it lists the commands src/cli/index.ts registers.
var COMMANDS = [
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

// Compiled code kept between runs of berth's CLI (issue 55: start-up is part of every command).
//
// - The single-file build (dist/berth.cjs) runs through runBundle(): compiled as a vm.Script
//   with V8's code cache of an earlier run of the same command, and, when there was none (or V8
//   refused it), the cache made at the end of this run, so it holds every function the command
//   ran, not only the file's top level (which is all Node's own compile cache keeps of a file).
//   One cache per command (validate, get, ...): each holds what that command runs (a first run
//   that parsed spec files leaves only a mark `<entry>.cold`: the next run makes the entry). The
//   first entry is made again once, by the first run SETTLE_MS after it (`<entry>.2`, read first
//   from then on), so that what a command's first runs did not do (an instance's first `get`,
//   before it has records) is not compiled again at every start for as long as the build. An entry is
//   named by the bundle's identity and version (device, inode, size, mtime, ctime: any write
//   changes the ctime) and Node's version and architecture; V8 refuses an entry made with other
//   flags or for a source of another length, and a refused entry is made again.
// - The compiled files under dist/ (a build by tsc alone) get Node's module compile cache
//   (module.enableCompileCache), in the same folder.
//
// Where: the folder `code-cache` in berth's cache folder, as src/spec/digest-store.ts finds it:
// $BERTH_CACHE_DIR (empty: no cache at all), else $XDG_CACHE_HOME/berth, else ~/.cache/berth.
// Never a shared folder such as /tmp (Node's default for its cache): compiled code read back runs
// as it is, so the folder must be the user's own. It is made 0700 and used only when it and the
// folder it is in belong to this user and no one else can write to them. NODE_DISABLE_COMPILE_CACHE
// turns both off, as it does Node's. Anything that goes wrong leaves berth without a cache, never
// without berth.

function ownedPrivate(dir) {
  var st = fs.lstatSync(dir);
  var uid = typeof process.getuid === 'function' ? process.getuid() : -1;
  return st.isDirectory() && (uid < 0 || st.uid === uid) && (st.mode & 0o022) === 0;
}

/** The cache folder, made if need be; undefined when none is to be used. */
function codeCacheDir(env) {
  if (env.NODE_DISABLE_COMPILE_CACHE) return undefined;
  try {
    var own = env.BERTH_CACHE_DIR;
    var root;
    if (own !== undefined) {
      if (own === '') return undefined;
      root = path.resolve(own);
    } else if (env.XDG_CACHE_HOME && path.isAbsolute(env.XDG_CACHE_HOME)) root = path.join(env.XDG_CACHE_HOME, 'berth');
    else {
      // node:os only here: with $BERTH_CACHE_DIR or $XDG_CACHE_HOME set, it is not loaded at all
      var home = require('os').homedir();
      if (!home) return undefined;
      root = path.join(home, '.cache', 'berth');
    }
    var dir = path.join(root, 'code-cache');
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    return ownedPrivate(dir) && ownedPrivate(root) ? dir : undefined;
  } catch (err) {
    return undefined;
  }
}

/** Node's module compile cache for the compiled files under dist/. */
function enableModuleCache(env) {
  var m = require('module');
  if (typeof m.enableCompileCache !== 'function' || env.NODE_COMPILE_CACHE) return;
  var dir = codeCacheDir(env);
  if (dir) m.enableCompileCache(path.join(dir, 'modules'));
}

/** The command a cache is for: the first of argv's words that names one of berth's commands ("other" else). */
function commandOf(argv, commands) {
  for (var i = 2; i < argv.length; i++) if (commands.indexOf(argv[i]) >= 0) return argv[i];
  return 'other';
}

/** How old a command's first cache entry is when a run makes its settled one. */
var SETTLE_MS = 10 * 60 * 1000;

/** Whether the entry `file` was made SETTLE_MS or more ago. */
function settledAfter(file) {
  try {
    return Date.now() - fs.statSync(file).mtimeMs >= SETTLE_MS;
  } catch (err) {
    return false;
  }
}

/** Writes `data` to `name` in `dir` atomically (a temp file, then a rename); old entries of other builds go. */
function save(dir, name, data, identity, prefix) {
  try {
    var tmp = path.join(dir, '.' + name + '.' + process.pid + '.tmp');
    fs.writeFileSync(tmp, data, { mode: 0o600 });
    fs.renameSync(tmp, path.join(dir, name));
    fs.readdirSync(dir).forEach(function (f) {
      if (f.indexOf(prefix + '-') === 0 && f.indexOf(identity) < 0) fs.rmSync(path.join(dir, f), { force: true });
    });
  } catch (err) {
    // best effort: the next run compiles again
  }
}

/** How a file of the split build begins: scripts/build-cli.ts writes it so. */
var WRAPPED = '(function (exports, require, module, __filename, __dirname) {';

/**
 * Loads a file of the build through the code cache; returns its exports. `kind` names its cache
 * entries ('bundle', the default: the file bin/berth.js runs; 'chunk-engine': the split build's
 * engine file); a new build's entry replaces the old build's of the same kind.
 */
function runBundle(file, env, argv, commands, kind) {
  kind = kind || 'bundle';
  var vm = require('vm');
  // The CommonJS loader's Module, as require('module') gives it, without loading node:module (~0.5 ms).
  var Module = module.constructor;
  // The build checks the file is ASCII (scripts/build-cli.ts): read as latin1, it becomes a string of
  // one byte per character with no decoding (half the time of utf8's); any other is read as utf8.
  var bytes = fs.readFileSync(file);
  var source = require('buffer').isAscii(bytes) ? bytes.latin1Slice(0, bytes.length) : bytes.toString('utf8');
  var dir = codeCacheDir(env);
  var name;
  var identity;
  var cached;
  var marked = false;
  // The entry read: the settled one (name + '.2'), else the first one (name), made by the
  // command's first run, which may have done little of what the runs after it do.
  var settled = false;
  if (dir) {
    var st = fs.statSync(file, { bigint: true });
    identity = [process.version, process.arch, st.dev, st.ino, st.size, st.mtimeNs, st.ctimeNs].join('-');
    name = kind + '-' + commandOf(argv, commands) + '-' + identity;
    try {
      cached = fs.readFileSync(path.join(dir, name + '.2'));
      settled = true;
    } catch (err) {
      try {
        cached = fs.readFileSync(path.join(dir, name));
      } catch (err2) {
        cached = undefined;
        marked = fs.existsSync(path.join(dir, name + '.cold'));
      }
    }
  }
  // A file of the split build is already a function expression (scripts/build-cli.ts WRAPPED):
  // compiled as it is, not as a new string of the wrapper and its text, which V8 would copy into one.
  var wrapped = source.charCodeAt(0) === 40 && source.slice(0, WRAPPED.length) === WRAPPED;
  // A first line `#!...` is a comment of the same length (the file's own shebang).
  if (source.charCodeAt(0) === 35 && source.charCodeAt(1) === 33) source = '//' + source.slice(2);
  var script = new vm.Script(wrapped ? source : Module.wrap(source), { filename: file, cachedData: cached });
  var m = new Module(file, module);
  m.filename = file;
  m.paths = Module._nodeModulePaths(path.dirname(file));
  require.cache[file] = m;
  script.runInThisContext().call(m.exports, m.exports, Module.createRequire(file), m, file, path.dirname(file));
  m.loaded = true;
  if (dir && (!cached || script.cachedDataRejected)) {
    process.once('exit', function () {
      // A first run that parsed spec files (the bundle's coldRun(): no cache had their outcome)
      // compiled their parser, which the runs after it, answered from the spec caches, would read
      // back at every start (~2 ms) without running it: it leaves only a mark, and the next run
      // makes the cache of what it ran (that one whatever it did, so that a command that parses
      // every time still gets a cache).
      if (!cached && !marked && typeof m.exports.coldRun === 'function' && m.exports.coldRun()) {
        save(dir, name + '.cold', Buffer.alloc(0), identity, kind);
        return;
      }
      save(dir, settled ? name + '.2' : name, script.createCachedData(), identity, kind);
      if (marked) {
        try {
          fs.rmSync(path.join(dir, name + '.cold'), { force: true });
        } catch (err) {
          // best effort: a mark left is only a run without the cache
        }
      }
    });
  } else if (dir && !settled && settledAfter(path.join(dir, name))) {
    // The first entry is SETTLE_MS old: this run makes the settled one, once (~3 ms), from what
    // the command runs now (a first `get` of an empty instance asked the engine and rendered no
    // row; the gets after it, a fleet's, do the opposite, and compiled that again at every start).
    process.once('exit', function () {
      // not from a run that parsed spec files (as above): a later run makes it
      if (typeof m.exports.coldRun === 'function' && m.exports.coldRun()) return;
      save(dir, name + '.2', script.createCachedData(), identity, kind);
      try {
        fs.rmSync(path.join(dir, name), { force: true });
      } catch (err) {
        // best effort: the settled entry is read first
      }
    });
  }
  return m.exports;
}

function mtime(file) {
  try {
    return fs.statSync(file).mtimeMs;
  } catch (err) {
    return -1;
  }
}

/** Runs berth: the split build, else the single file, else the files tsc wrote. */
function launch(repo) {
  // `berth --version` alone: the version, without loading berth (what the program says for it).
  if (process.argv.length === 3 && (process.argv[2] === '--version' || process.argv[2] === '-V')) {
    var text = JSON.parse(fs.readFileSync(path.join(repo, 'package.json'), 'utf8')).version + '\n';
    // To a file or /dev/null, written directly (as src/cli/io.ts does): process.stdout would be
    // made (a stream, and the modules it loads) for one line.
    var st;
    try {
      st = fs.fstatSync(1);
    } catch (err) {
      st = undefined;
    }
    if (st && (st.isFile() || (st.isCharacterDevice() && st.rdev === fs.statSync('/dev/null').rdev))) fs.writeSync(1, text);
    else process.stdout.write(text);
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
    var word = commandOf(process.argv, COMMANDS);
    var own = path.join(repo, 'dist', 'split', word + '.cjs');
    var cli;
    if (word !== 'other' && mtime(own) >= built) {
      cli = runBundle(own, process.env, process.argv, COMMANDS, 'bundle.' + word);
      if (!cli.handles(process.argv)) cli = undefined;
    }
    if (!cli) cli = runBundle(split, process.env, process.argv, COMMANDS);
    // the engine file and the leaf files (parse.cjs, log.cjs), through the code cache too
    cli.setChunkLoader(function (file, name) {
      return runBundle(file, process.env, process.argv, COMMANDS, 'chunk-' + name);
    });
    cli.main(process.argv);
  } else if (b >= 0 && b >= built) {
    runBundle(bundle, process.env, process.argv, COMMANDS).main(process.argv);
  } else {
    enableModuleCache(process.env);
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
}

module.exports = {
  checkNode: checkNode,
  COMMANDS: COMMANDS,
  codeCacheDir: codeCacheDir,
  enableModuleCache: enableModuleCache,
  runBundle: runBundle,
  commandOf: commandOf,
};
if (require.main === module) {
  var repo = path.resolve(__dirname, '..');
  checkNode(repo);
  launch(repo);
}
