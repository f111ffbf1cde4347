/**
 * The single-file build of berth: dist/berth.cjs, one CommonJS file that runs with only `node`
 * (22.22 or later: bin/berth.js's checkNode runs first, as the banner), no node_modules beside it: `node berth.cjs reconcile --once`.
 *
 * - The spec schema and its kept validator are bundled (src/bundle/schema-files.ts stands in
 *   for src/spec/schema-files.ts).
 * - berth's version is compiled in (BERTH_BUNDLED_VERSION).
 * - Native add-ons that dependencies try to load and do without (ssh2's crypto binding,
 *   cpu-features, fsevents on macOS) stay outside; they are optional at run time.
 * Deterministic: the same sources give the same bytes. Run: `npm run build:cli`.
 */
import { build, type BuildOptions, type Plugin } from 'esbuild';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import path from 'node:path';

const repo = path.resolve(__dirname, '..');
const out = process.env.BERTH_CLI_BUNDLE ?? path.join(repo, 'dist', 'berth.cjs');
const pkg = JSON.parse(readFileSync(path.join(repo, 'package.json'), 'utf8')) as { version: string };

/** bin/berth.js's version check (the function checkNode, up to the line that ends it), as an expression. */
const launcherSource = readFileSync(path.join(repo, 'bin', 'berth.js'), 'utf8');
const nodeCheck = launcherSource.slice(
  launcherSource.indexOf('function checkNode'),
  launcherSource.lastIndexOf('}', launcherSource.indexOf('// end of checkNode')) + 1,
);
if (!nodeCheck.startsWith('function checkNode') || !nodeCheck.endsWith('}')) throw new Error('build-cli: no checkNode function in bin/berth.js');

const bundledSchemaFiles: Plugin = {
  name: 'bundled-schema-files',
  setup(b) {
    b.onResolve({ filter: /\/schema-files$/ }, (args) =>
      args.importer.endsWith(path.join('src', 'spec', 'schema.ts')) ? { path: path.join(repo, 'src', 'bundle', 'schema-files.ts') } : undefined,
    );
    b.onResolve({ filter: /\?text$/ }, (args) => ({ path: path.resolve(args.resolveDir, args.path.replace(/\?text$/, '')), namespace: 'text' }));
    b.onLoad({ filter: /.*/, namespace: 'text' }, (args) => ({ contents: readFileSync(args.path, 'utf8'), loader: 'text' }));
  },
};

/**
 * The schemas' kept validators (schemas/*.validator.cjs) are what the build runs when they were made
 * from the schemas as they are now (their digest); src/spec/schema.ts compiles a schema with ajv
 * only when its kept code is stale. When both are fresh, ajv's compiler (ajv/dist/2020,
 * ajv/dist/standalone and fast-uri, ~150 KB of every file) is left out; when one is stale, it stays,
 * with a warning (`npm run gen:validator` writes them; a unit test fails meanwhile).
 */
function keptValidatorsFresh(): boolean {
  const digest = (file: string) =>
    createHash('sha256')
      .update(readFileSync(path.join(repo, 'schemas', file), 'utf8'))
      .digest('hex');
  const kept = (file: string) => (require(path.join(repo, 'schemas', file)) as { schemaDigest?: string }).schemaDigest;
  const fresh = kept('attempt.validator.cjs') === digest('attempt.schema.json') && kept('config.validator.cjs') === digest('config.schema.json');
  if (!fresh)
    process.stderr.write('build-cli: a kept validator (schemas/*.validator.cjs) is stale: ajv compiles it at run time; run `npm run gen:validator`\n');
  return fresh;
}
const noSchemaCompiler: Plugin = {
  name: 'no-schema-compiler',
  setup(b) {
    if (!keptValidatorsFresh()) return;
    b.onResolve({ filter: /^ajv\/dist\/(2020|standalone)$/ }, (args) =>
      path.relative(repo, args.importer) === path.join('src', 'spec', 'schema.ts') ? { path: args.path, namespace: 'no-schema-compiler' } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'no-schema-compiler' }, (args) => ({
      contents: `throw new Error('berth: ${args.path} (the schema compiler) is not in this build: its kept validators were fresh when it was built');`,
      loader: 'js',
    }));
  },
};

/**
 * dockerode's BuildKit support (lib/session.js, lib/buildkit.js: gRPC, protobufjs, OpenTelemetry,
 * about 900 KB) is for building images and following a build's progress, which berth never does:
 * in the bundle each is a stand-in that says so if it is ever called. Every byte of the file is
 * read and checked by every command, so this is start-up time (issue 55).
 */
const noBuildKit: Plugin = {
  name: 'no-buildkit',
  setup(b) {
    b.onLoad({ filter: /[\\/]dockerode[\\/]lib[\\/](session|buildkit)\.js$/ }, (args) => ({
      contents: `var fail = function () { throw new Error('berth: dockerode ${path.basename(args.path)} (BuildKit) is not in the single-file build'); };
module.exports = fail; module.exports.followProgress = fail;`,
      loader: 'js',
    }));
  },
};

/**
 * What src/engine/docker/load-dockerode.ts does for dockerode in node_modules, in the bundle:
 * docker-modem's SSH agent (ssh2 and its crypto, for an ssh:// DOCKER_HOST), its HttpDuplex (for
 * a hijacked connection) and tar-fs (an image's build context) are loaded by dockerode at
 * require time but rarely used; each is a stand-in that runs the real module (still in the
 * bundle) on its first call. Without this every command that talks to the engine would run
 * ssh2's modules first.
 */
const DEFERRED = /[\\/](docker-modem[\\/]lib[\\/](ssh|http_duplex)\.js|tar-fs[\\/]index\.js)$/;
const deferredModules: Plugin = {
  name: 'deferred-modules',
  setup(b) {
    b.onLoad({ filter: DEFERRED, namespace: 'file' }, (args) => {
      const real = JSON.stringify(`berth-real:${args.path}`);
      const contents = args.path.endsWith(`tar-fs${path.sep}index.js`)
        ? `var real; function load() { return real || (real = require(${real})); }
module.exports = { pack: function () { return load().pack.apply(this, arguments); }, extract: function () { return load().extract.apply(this, arguments); } };`
        : `var real; function load() { return real || (real = require(${real})); }
module.exports = function deferred() { var f = load(); return new.target ? Reflect.construct(f, arguments) : f.apply(this, arguments); };`;
      return { contents, loader: 'js' };
    });
    b.onResolve({ filter: /^berth-real:/ }, (args) => ({ path: args.path.slice('berth-real:'.length), namespace: 'real' }));
    b.onLoad({ filter: /.*/, namespace: 'real' }, (args) => ({ contents: readFileSync(args.path, 'utf8'), loader: 'js', resolveDir: path.dirname(args.path) }));
  },
};

/**
 * commander imports child_process (and with it net, dgram and the stream modules) for its
 * executable subcommands, which berth has none of: in the bundle it gets a stand-in that loads
 * the real module on its first spawn. Start-up time of every command (issue 55).
 */
const lazyChildProcess: Plugin = {
  name: 'lazy-child-process',
  setup(b) {
    b.onResolve({ filter: /^(node:)?child_process$/ }, (args) =>
      /[\\/]node_modules[\\/]commander[\\/]/.test(args.importer) ? { path: 'child_process', namespace: 'lazy-child-process' } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'lazy-child-process' }, () => ({
      contents: `var real; function load() { return real || (real = require('node:child_process')); }
module.exports = { spawn: function () { return load().spawn.apply(this, arguments); } };`,
      loader: 'js',
    }));
  },
};

/**
 * commander (an ES module) takes node:path, node:fs and node:process by their default export: in a
 * CommonJS bundle each became a copy of every property of the module (esbuild's __toESM, ~0.5 ms
 * at every start for process's and fs's); here the default export is the module itself, which is
 * what Node gives an ES module for it.
 */
const commanderBuiltins: Plugin = {
  name: 'commander-builtins',
  setup(b) {
    b.onResolve({ filter: /^node:(path|fs|process)$/ }, (args) =>
      /[\\/]node_modules[\\/]commander[\\/]/.test(args.importer) ? { path: args.path, namespace: 'commander-builtin' } : undefined,
    );
    // node:process is the global process (require would load the module that exports it, ~0.1 ms)
    b.onLoad({ filter: /.*/, namespace: 'commander-builtin' }, (args) => ({
      contents: args.path === 'node:process' ? 'export default process;' : `export default require(${JSON.stringify(args.path)});`,
      loader: 'js',
    }));
  },
};

/**
 * commander's Option tells a variadic option ('--x <v...>') with a Unicode property escape
 * (\\p{ID_Continue}): V8 compiles it with ICU's property tables the first time, ~0.4 ms of every
 * command. Here flags in ASCII are told by the same rule in ASCII ([0-9A-Z_a-z] is what ID_Continue
 * holds there); any other flags still by commander's own expression.
 */
const COMMANDER_VARIADIC = '/\\p{ID_Continue}\\.\\.\\.[>\\]]$/u.test(flags)';
const commanderVariadic: Plugin = {
  name: 'commander-variadic',
  setup(b) {
    b.onLoad({ filter: /[\\/]node_modules[\\/]commander[\\/]lib[\\/]option\.js$/ }, (args) => {
      const text = readFileSync(args.path, 'utf8');
      if (!text.includes(COMMANDER_VARIADIC))
        throw new Error(`build-cli: ${args.path} no longer holds ${COMMANDER_VARIADIC} (commander changed): see commanderVariadic`);
      const ascii = '(/[^\\x00-\\x7f]/.test(flags) ? ' + COMMANDER_VARIADIC + ' : /[0-9A-Z_a-z]\\.\\.\\.[>\\]]$/.test(flags))';
      return { contents: text.split(COMMANDER_VARIADIC).join(ascii), loader: 'js', resolveDir: path.dirname(args.path) };
    });
  },
};

/**
 * berth's modules take node:path by its default export (`import path from 'node:path'`) or as a
 * namespace: in a CommonJS bundle each of those ~75 imports became a copy of the module's every
 * property (esbuild's __toESM) made when its module first runs. Here node:path is one module of the
 * bundle that exports what node:path exports, each name bound once (start-up, issue 55).
 */
const PATH_NAMES = Object.keys(path).filter((k) => /^[A-Za-z_$][\w$]*$/.test(k));
const sharedPath: Plugin = {
  name: 'shared-path',
  setup(b) {
    b.onResolve({ filter: /^(node:)?path$/ }, (args) =>
      path.relative(repo, args.importer).startsWith(`src${path.sep}`) ? { path: 'path', namespace: 'shared-path' } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'shared-path' }, () => ({
      contents: `const m = require('node:path');\nexport default m;\nexport const { ${PATH_NAMES.join(', ')} } = m;`,
      loader: 'js',
    }));
  },
};

/**
 * A Node module of berth's modules (src/) that loads when berth's code first calls one of its
 * functions, not when a module that may call it is evaluated: each of `names` is a function that
 * loads the module on its first call (a name missing from them fails the build: "No matching
 * export"); with `values`, its default export holds those functions and getters for those values.
 */
function lazyBuiltin(name: string, names: readonly string[], values?: readonly string[]): Plugin {
  return {
    name: `lazy-${name}`,
    setup(b) {
      b.onResolve({ filter: new RegExp(`^(node:)?${name}$`) }, (args) =>
        path.relative(repo, args.importer).startsWith(`src${path.sep}`) ? { path: name, namespace: `lazy-${name}` } : undefined,
      );
      b.onLoad({ filter: /.*/, namespace: `lazy-${name}` }, () => ({
        contents: [
          `var real; function load() { return real || (real = require('node:${name}')); }`,
          ...names.map((n) => `export function ${n}() { return load().${n}.apply(undefined, arguments); }`),
          ...(values ? [`export default { ${[...names, ...values.map((v) => `get ${v}() { return load().${v}; }`)].join(', ')} };`] : []),
        ].join('\n'),
        loader: 'js',
      }));
    },
  };
}

/**
 * node:crypto (and node:stream, which it loads: ~3 ms): `get` and `validate` over unchanged specs
 * never call it (spec/hash.ts hashes their few short strings in JavaScript). berth's modules take
 * crypto by named imports only, these.
 */
const lazyCrypto = lazyBuiltin('crypto', ['createHash', 'createHmac', 'hash', 'randomBytes', 'timingSafeEqual']);

/**
 * node:os, by its functions (as named imports, or as its default export's or its namespace's):
 * ~0.2 ms of every start otherwise, for the home folder a command may never look up.
 */
const lazyOs = lazyBuiltin(
  'os',
  Object.entries(os as unknown as Record<string, unknown>)
    .filter(([, v]) => typeof v === 'function')
    .map(([k]) => k),
  ['EOL', 'constants', 'devNull'],
);

/** What the single file and the split build's main files load late, or once (start-up, issue 55). */
function startUpPlugins(): Plugin[] {
  return [lazyChildProcess, commanderBuiltins, commanderVariadic, lazyCrypto, lazyOs, sharedPath];
}

/** What every build shares: the single file and the split build's files. */
const common = {
  bundle: true,
  platform: 'node',
  target: 'node22',
  format: 'cjs',
  absWorkingDir: repo,
  define: { BERTH_BUNDLED_VERSION: JSON.stringify(pkg.version) },
  external: ['cpu-features', 'fsevents', '*.node'],
  // Smaller to read and compile at every start; names are kept, so stack traces still read.
  minifyWhitespace: true,
  minifySyntax: true,
  legalComments: 'none',
  // load-dockerode's require.resolve finds no node_modules in the bundle and falls back to loading
  // dockerode whole, as it does for any layout it does not know.
  logOverride: { 'require-resolve-not-external': 'silent' },
  logLevel: 'warning',
} satisfies BuildOptions;

/** Run as a program (`node berth.cjs`), it runs berth; required (bin/berth.js), it hands over main(). */
const MAIN =
  "const cli = require('./src/cli/index'); module.exports = { main: cli.main, coldRun: require('./src/spec/file-cache').specFilesParsed }; if (require.main === module) cli.main(process.argv);";

/** One byte per character: a file with any other is read into a string twice the size, slower at every start. */
function checkAscii(file: string): void {
  const text = readFileSync(file, 'latin1');
  const at = text.search(/[^\x00-\x7f]/);
  if (at >= 0)
    throw new Error(`build-cli: ${file} has a character outside ASCII at offset ${at}: ${JSON.stringify(text.slice(Math.max(0, at - 60), at + 20))}`);
}

async function singleFile(): Promise<void> {
  await build({
    ...common,
    stdin: { contents: MAIN, resolveDir: repo, sourcefile: 'berth-cli.js', loader: 'js' },
    outfile: out,
    // The version check runs before any of the bundle's modules; the bundle's own modules need 22.22.
    banner: { js: `#!/usr/bin/env node\n(${nodeCheck})();` },
    plugins: [bundledSchemaFiles, noSchemaCompiler, noBuildKit, deferredModules, ...startUpPlugins()],
    // In a checkout (dist/berth.cjs), a map back to the sources: errors' stacks with --enable-source-maps, and coverage.
    sourcemap: process.env.BERTH_CLI_BUNDLE ? false : 'linked',
  });
  checkAscii(out);
  process.stderr.write(`build-cli: wrote ${path.relative(process.cwd(), out)}\n`);
}

/**
 * The split build, which bin/berth.js runs (start-up, issue 55), in dist/split/:
 * - berth.cjs: the command line, every command, everything but the engine client;
 *   engine.cjs: the engine client (src/engine/docker, src/backend/swarm, dockerode and its
 *   packages), read only when a command first asks for an engine (src/cli/context.ts);
 * - parse.cjs and log.cjs (one each for every main file): the yaml package, the kept validators
 *   and the schemas' text, read only when a spec file or berth.yaml is first parsed; winston,
 *   read when a first log line is written (LEAF_FILES);
 * - for the short commands a user runs most (COMMAND_FILES), a file of that command's own:
 *   get.cjs holds the command line with `get` alone (the other commands' modules are left out),
 *   get.engine.cjs its engine client. bin/berth.js runs it when the command line names that
 *   command (the file's handles(argv) says so as the command line itself reads argv), else berth.cjs.
 * A command that needs no engine then reads, checks and compiles a third of the bytes.
 *
 * One copy of every module: a module both a main file and its engine file reach is the main
 * file's; the engine file asks the main file for it (by its path, through the table the main file
 * is built with), so a class, a constant or a module's state is the same object on both sides.
 * Built in three passes: the main file (what it holds), the engine file (which of those it asks
 * for), the main file again with that table (what it holds is checked to be unchanged).
 */
const SPLIT_DIR = path.join(repo, 'dist', 'split');

/**
 * Every file of the split build is one function expression, as CommonJS wraps a module's text:
 * bin/berth.js compiles it as it is (no string made of the wrapper and the file's ~400 KB, which
 * V8 would copy into one again). Not a file Node's require runs: bin/berth.js (or berth-chunks)
 * loads it.
 */
const WRAPPED = { js: '(function (exports, require, module, __filename, __dirname) {' };
const WRAPPED_END = { js: '})' };
const ENGINE_ENTRIES: Record<string, string> = { docker: 'src/engine/docker/index.ts', swarm: 'src/backend/swarm/index.ts' };

/** Commands with a file of their own, and the modules of src/cli/commands their action loads. */
export const COMMAND_FILES: Record<string, readonly string[]> = { get: ['get', 'resolve'], validate: ['validate'] };

/** In a command's own file: what src/cli/index.ts loads for the other commands' actions is left out. */
function onlyCommand(keep: readonly string[]): Plugin {
  return {
    name: 'only-command',
    setup(b) {
      b.onResolve({ filter: /^\.\/(commands\/[a-z-]+|completion)$/ }, (args) => {
        if (path.relative(repo, args.importer) !== path.join('src', 'cli', 'index.ts')) return undefined;
        const mod = args.path.replace(/^\.\/(commands\/)?/, '');
        return keep.includes(mod) ? undefined : { path: mod, namespace: 'left-out' };
      });
      b.onLoad({ filter: /.*/, namespace: 'left-out' }, (args) => ({
        contents: `throw new Error('berth: ${args.path} is not in this file of the split build (bin/berth.js runs dist/split/berth.cjs for it)');`,
        loader: 'js',
      }));
    },
  };
}

/**
 * The leaf files of the split build: packages (and berth's data) that only some runs of a command
 * use, which take nothing from berth's own modules, each in a file of its own read (through the
 * code cache) on first use. One file for every main file. A main file asks for their modules by
 * these keys (leafOf tells an import of one).
 * - parse.cjs: what only reading a spec file or berth.yaml runs (the yaml package, the kept
 *   validators and the schemas' text: half of a main file's bytes). A command whose specs are
 *   answered from their caches does not read it.
 * - log.cjs: winston (with logform, its colors and readable-stream: a fifth of a main file), which
 *   util/log.ts loads only when a line is written.
 */
const LEAF_FILES: Record<string, Record<string, string>> = {
  parse: {
    yaml: 'yaml',
    'attempt.validator': './schemas/attempt.validator.cjs',
    'config.validator': './schemas/config.validator.cjs',
    'attempt.schema': './schemas/attempt.schema.json?text',
    'config.schema': './schemas/config.schema.json?text',
  },
  log: { winston: 'winston' },
};

/** An import's leaf file and key: a package by its name, one of berth's files by its file name. */
function leafOf(importPath: string): { leaf: string; key: string } | undefined {
  for (const [leaf, entries] of Object.entries(LEAF_FILES))
    for (const [key, what] of Object.entries(entries))
      if (what.startsWith('./') ? importPath.endsWith(`/${path.basename(what)}`) : importPath === what) return { leaf, key };
  return undefined;
}
const escaped = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const LEAF_IMPORTS = new RegExp(
  Object.values(LEAF_FILES)
    .flatMap((entries) => Object.values(entries))
    .map((what) => (what.startsWith('./') ? `/${escaped(path.basename(what))}$` : `^${escaped(what)}$`))
    .join('|'),
);

/** In a main file: a leaf file's modules stand for its exports, loaded on first use (through berth-chunks). */
const leafBoundary: Plugin = {
  name: 'leaf-boundary',
  setup(b) {
    b.onResolve({ filter: LEAF_IMPORTS }, (args) => {
      const l = leafOf(args.path);
      return l ? { path: `${l.leaf}/${l.key}`, namespace: 'leaf-chunk' } : undefined;
    });
    b.onLoad({ filter: /.*/, namespace: 'leaf-chunk' }, (args) => {
      const [leaf, key] = args.path.split(/\/(.*)/);
      return { contents: `module.exports = require('berth-chunks').leaf(${JSON.stringify(leaf)})[${JSON.stringify(key)}];`, loader: 'js', resolveDir: repo };
    });
  },
};

/** The leaf files: each its entries' exports, by key. */
async function leafFiles(): Promise<void> {
  for (const [leaf, entries] of Object.entries(LEAF_FILES)) {
    const file = path.join(SPLIT_DIR, `${leaf}.cjs`);
    await build({
      ...common,
      stdin: {
        contents: `module.exports = { ${Object.entries(entries)
          .map(([k, v]) => `${JSON.stringify(k)}: require(${JSON.stringify(v)})`)
          .join(', ')} };`,
        resolveDir: repo,
        sourcefile: `berth-${leaf}.js`,
        loader: 'js',
      },
      outfile: file,
      banner: WRAPPED,
      footer: WRAPPED_END,
      plugins: [bundledSchemaFiles, lazyOs, sharedPath],
      sourcemap: 'linked',
    });
    checkAscii(file);
  }
}

/** In a main file: the engine's entry modules stand for its engine file's exports, loaded on first use. */
function engineBoundary(engineFile: string): Plugin {
  return {
    name: 'engine-boundary',
    setup(b) {
      b.onResolve({ filter: /^\.\.?\// }, async (args) => {
        if (args.pluginData?.inner) return undefined;
        const r = await b.resolve(args.path, { kind: args.kind, importer: args.importer, resolveDir: args.resolveDir, pluginData: { inner: true } });
        const key = path.relative(repo, r.path);
        const name = Object.keys(ENGINE_ENTRIES).find((k) => ENGINE_ENTRIES[k] === key);
        return name ? { path: name, namespace: 'engine-chunk' } : undefined;
      });
      b.onLoad({ filter: /.*/, namespace: 'engine-chunk' }, (args) => ({
        contents: `module.exports = require('berth-chunks').engine()[${JSON.stringify(args.path)}];`,
        loader: 'js',
        resolveDir: repo,
      }));
      // Loads the engine file once (through the launcher's code cache when it gave a loader), linked to this file's modules.
      b.onResolve({ filter: /^berth-chunks$/ }, () => ({ path: 'berth-chunks', namespace: 'berth-chunks' }));
      b.onLoad({ filter: /.*/, namespace: 'berth-chunks' }, () => ({
        contents: `var loaded, loader;
exports.setLoader = function (f) { loader = f; };
// Without the launcher's loader (bin/berth.js gives one): a file of the split build (a function
// expression, as CommonJS wraps a module) run as a module.
function run(file) {
  // node:module (in the bundle, \`module\` is the bundler's object, not Node's Module)
  var Module = require('module');
  var dir = require('path').dirname(file);
  var m = new Module(file, module);
  m.filename = file;
  m.paths = Module._nodeModulePaths(dir);
  require('vm').runInThisContext(require('fs').readFileSync(file, 'latin1'), { filename: file }).call(m.exports, m.exports, Module.createRequire(file), m, file, dir);
  m.loaded = true;
  return m.exports;
}
exports.engine = function () {
  if (!loaded) {
    var file = require('path').join(__dirname, ${JSON.stringify(engineFile)});
    var link = loader ? loader(file, ${JSON.stringify(engineFile.replace(/\.cjs$/, ''))}) : run(file);
    loaded = link(require('berth-host-table'));
  }
  return loaded;
};
var leaves = {};
exports.leaf = function (name) {
  if (!leaves[name]) {
    var file = require('path').join(__dirname, name + '.cjs');
    leaves[name] = loader ? loader(file, name) : run(file);
  }
  return leaves[name];
};`,
        loader: 'js',
        resolveDir: repo,
      }));
    },
  };
}

/** In a main file: the table of the modules its engine file takes from it, by path. */
function hostTable(shared: readonly string[]): Plugin {
  return {
    name: 'host-table',
    setup(b) {
      b.onResolve({ filter: /^berth-host-table$/ }, () => ({ path: 'berth-host-table', namespace: 'berth-host-table' }));
      b.onLoad({ filter: /.*/, namespace: 'berth-host-table' }, () => ({
        contents: `var table = {
${shared.map((k) => `  ${JSON.stringify(k)}: function () { return require(${JSON.stringify(path.join(repo, k))}); }`).join(',\n')}
};
var got = {};
module.exports = function (key) {
  if (!(key in got)) {
    if (!table[key]) throw new Error('berth: the engine file asks for ' + key + ', which its main file does not hold (files of two builds?)');
    got[key] = table[key]();
  }
  return got[key];
};`,
        loader: 'js',
        resolveDir: repo,
      }));
    },
  };
}

/** In an engine file: a module its main file holds is taken from it; records which. */
function fromHost(held: ReadonlySet<string>, asked: Set<string>): Plugin {
  return {
    name: 'from-host',
    setup(b) {
      b.onResolve({ filter: /.*/ }, async (args) => {
        if (args.pluginData?.inner || args.namespace !== 'file' || args.kind === 'entry-point' || args.path === 'berth-host-link') return undefined;
        const r = await b.resolve(args.path, { kind: args.kind, importer: args.importer, resolveDir: args.resolveDir, pluginData: { inner: true } });
        if (r.errors.length || r.external || r.namespace !== 'file') return undefined;
        const key = path.relative(repo, r.path);
        if (!held.has(key)) return undefined;
        asked.add(key);
        return { path: key, namespace: 'host' };
      });
      b.onLoad({ filter: /.*/, namespace: 'host' }, (args) => ({
        contents: `module.exports = require('berth-host-link').get(${JSON.stringify(args.path)});`,
        loader: 'js',
        resolveDir: repo,
      }));
      b.onResolve({ filter: /^berth-host-link$/ }, () => ({ path: 'berth-host-link', namespace: 'berth-host-link' }));
      b.onLoad({ filter: /.*/, namespace: 'berth-host-link' }, () => ({
        contents: 'var host; exports.set = function (h) { host = h; }; exports.get = function (key) { return host(key); };',
        loader: 'js',
      }));
    },
  };
}

/** One main file of the split build and its engine file: `berth` (every command) or a command's own. */
async function splitPair(name: string, keep?: readonly string[]): Promise<number> {
  const mainFile = path.join(SPLIT_DIR, `${name}.cjs`);
  const engineBase = name === 'berth' ? 'engine.cjs' : `${name}.engine.cjs`;
  const engineFile = path.join(SPLIT_DIR, engineBase);
  const exportsOf =
    keep === undefined ? 'main: cli.main' : `main: cli.main, handles: function (argv) { return cli.commandOf(argv) === ${JSON.stringify(name)}; }`;
  const mainOptions = (shared: readonly string[], write: boolean): BuildOptions => ({
    ...common,
    // One build, several files: the spec cache (src/spec/disk-cache.ts) names the build by berth.cjs's stat in each.
    define: { ...common.define, BERTH_BUILD_FILE: JSON.stringify('berth.cjs') },
    stdin: {
      contents: `const cli = require('./src/cli/index'); module.exports = { ${exportsOf}, setChunkLoader: require('berth-chunks').setLoader, coldRun: require('./src/spec/file-cache').specFilesParsed };`,
      resolveDir: repo,
      sourcefile: 'berth-cli.js',
      loader: 'js',
    },
    outfile: mainFile,
    write,
    metafile: true,
    banner: WRAPPED,
    footer: WRAPPED_END,
    // bin/berth.js checks Node's version before it reads this file.
    plugins: [
      leafBoundary,
      bundledSchemaFiles,
      noSchemaCompiler,
      ...(keep ? [onlyCommand(keep)] : []),
      engineBoundary(engineBase),
      hostTable(shared),
      ...startUpPlugins(),
    ],
    sourcemap: 'linked',
  });
  const inputs = (m: { inputs: Record<string, unknown> } | undefined) =>
    new Set(Object.keys(m?.inputs ?? {}).filter((k) => !k.includes(':') && !k.startsWith('<')));
  const first = await build(mainOptions([], false));
  const held = inputs(first.metafile);
  const asked = new Set<string>();
  await build({
    ...common,
    stdin: {
      contents: `var link = require('berth-host-link');
module.exports = function (host) { link.set(host); return { ${Object.entries(ENGINE_ENTRIES)
        .map(([k, v]) => `${k}: require(${JSON.stringify(`./${v}`)})`)
        .join(', ')} }; };`,
      resolveDir: repo,
      sourcefile: 'berth-engine.js',
      loader: 'js',
    },
    outfile: engineFile,
    banner: WRAPPED,
    footer: WRAPPED_END,
    define: { ...common.define, BERTH_BUILD_FILE: JSON.stringify('berth.cjs') },
    plugins: [bundledSchemaFiles, noSchemaCompiler, fromHost(held, asked), noBuildKit, deferredModules, lazyOs, sharedPath],
    sourcemap: 'linked',
  });
  const shared = [...asked].sort();
  const second = await build(mainOptions(shared, true));
  const again = inputs(second.metafile);
  if (again.size !== held.size || [...again].some((k) => !held.has(k)))
    throw new Error(`build-cli: ${name}.cjs of the split build holds other modules once it lends some to its engine file`);
  for (const f of [mainFile, engineFile]) checkAscii(f);
  return shared.length;
}

async function splitBuild(): Promise<void> {
  rmSync(SPLIT_DIR, { recursive: true, force: true });
  mkdirSync(SPLIT_DIR, { recursive: true });
  await leafFiles();
  await splitPair('berth');
  for (const [name, keep] of Object.entries(COMMAND_FILES)) await splitPair(name, keep);
  process.stderr.write(
    `build-cli: wrote ${path.relative(process.cwd(), SPLIT_DIR)}/ (berth.cjs, engine.cjs, ${Object.keys(LEAF_FILES)
      .map((l) => `${l}.cjs`)
      .join(', ')}, and ${Object.keys(COMMAND_FILES).join(', ')}'s own)\n`,
  );
}

void (async () => {
  await singleFile();
  if (!process.env.BERTH_CLI_BUNDLE) await splitBuild();
})();
