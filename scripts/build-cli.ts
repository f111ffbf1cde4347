/**
 * The single-file build of berth: dist/berth.cjs, one CommonJS file that runs with only `node`
 * (22.22 or later: bin/node-check.js runs first, as the banner), no node_modules beside it: `node berth.cjs reconcile --once`.
 *
 * - The spec schema and its kept validator are bundled (src/bundle/schema-files.ts stands in
 *   for src/spec/schema-files.ts).
 * - berth's version is compiled in (BERTH_BUNDLED_VERSION).
 * - Native add-ons that dependencies try to load and do without (ssh2's crypto binding,
 *   cpu-features, fsevents on macOS) stay outside; they are optional at run time.
 * Deterministic: the same sources give the same bytes. Run: `npm run build:cli`.
 */
import { build, type Plugin } from 'esbuild';
import { readFileSync } from 'node:fs';
import path from 'node:path';

const repo = path.resolve(__dirname, '..');
const out = process.env.BERTH_CLI_BUNDLE ?? path.join(repo, 'dist', 'berth.cjs');
const pkg = JSON.parse(readFileSync(path.join(repo, 'package.json'), 'utf8')) as { version: string };

/** bin/node-check.js's function, as an expression. */
const checkSource = readFileSync(path.join(repo, 'bin', 'node-check.js'), 'utf8');
const nodeCheck = checkSource.slice(checkSource.indexOf('function checkNode'), checkSource.lastIndexOf('}') + 1);

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

void build({
  // Run as a program (`node berth.cjs`), it runs berth; required (bin/berth.js), it hands over main().
  stdin: {
    contents: "const cli = require('./src/cli/index'); module.exports = { main: cli.main }; if (require.main === module) cli.main(process.argv);",
    resolveDir: repo,
    sourcefile: 'berth-cli.js',
    loader: 'js',
  },
  bundle: true,
  platform: 'node',
  target: 'node22',
  format: 'cjs',
  outfile: out,
  // The version check runs before any of the bundle's modules; the bundle's own modules need 22.22.
  banner: { js: `#!/usr/bin/env node\n(${nodeCheck})();` },
  define: { BERTH_BUNDLED_VERSION: JSON.stringify(pkg.version) },
  external: ['cpu-features', 'fsevents', '*.node'],
  plugins: [bundledSchemaFiles, noBuildKit, deferredModules, lazyChildProcess],
  // Smaller to read and compile at every start; names are kept, so stack traces still read.
  minifyWhitespace: true,
  minifySyntax: true,
  legalComments: 'none',
  // load-dockerode's require.resolve finds no node_modules in the bundle and falls back to loading
  // dockerode whole, as it does for any layout it does not know.
  logOverride: { 'require-resolve-not-external': 'silent' },
  logLevel: 'warning',
  // In a checkout (dist/berth.cjs), a map back to the sources: errors' stacks with --enable-source-maps, and coverage.
  sourcemap: process.env.BERTH_CLI_BUNDLE ? false : 'linked',
}).then(() => {
  // One byte per character: a file with any other is read into a string twice the size, slower at every start.
  const text = readFileSync(out, 'latin1');
  const at = text.search(/[^\x00-\x7f]/);
  if (at >= 0) throw new Error(`build-cli: ${out} has a character outside ASCII at offset ${at}: ${JSON.stringify(text.slice(Math.max(0, at - 60), at + 20))}`);
  process.stderr.write(`build-cli: wrote ${path.relative(process.cwd(), out)}\n`);
});
