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

void build({
  stdin: { contents: "require('./src/cli/index').main(process.argv);", resolveDir: repo, sourcefile: 'berth-cli.js', loader: 'js' },
  bundle: true,
  platform: 'node',
  target: 'node22',
  format: 'cjs',
  outfile: out,
  // The version check runs before any of the bundle's modules; the bundle's own modules need 22.22.
  banner: { js: `#!/usr/bin/env node\n(${nodeCheck})();` },
  define: { BERTH_BUNDLED_VERSION: JSON.stringify(pkg.version) },
  external: ['cpu-features', 'fsevents', '*.node'],
  plugins: [bundledSchemaFiles],
  legalComments: 'none',
  // load-dockerode's require.resolve finds no node_modules in the bundle and falls back to loading
  // dockerode whole, as it does for any layout it does not know.
  logOverride: { 'require-resolve-not-external': 'silent' },
  logLevel: 'warning',
}).then(() => process.stderr.write(`build-cli: wrote ${path.relative(process.cwd(), out)}\n`));
