/**
 * `make test-engines`: the whole compatibility matrix (README, "Engines"). The engine contract,
 * lifecycle, trust (export, grade, provenance, pinning), disk and isolation suites, run whole on
 * each engine of the matrix in turn: the machine's own (20.10), then each private engine of
 * test/support/engine-matrix.ts (26.1, 28.5, 28.5 with the containerd image store), started for
 * its turn from the root scripts/engines-up.sh made, given the test images (`docker save | load`
 * from the machine's engine), and ended after it. A private engine's turn is mocha in that
 * engine's network namespace (so the tests reach its containers as they reach the machine's
 * engine's) with DOCKER_HOST its socket: the tests, and the berth they run, know no other engine.
 * Each turn is its own test run (BERTH_TEST_RUN `<run>-<tag>`: its own labels, leak check).
 *   ENGINES=e20,e28c   which engines (default: all); FILES="test/engine/x.test.ts ..." which suites
 * Exit 1 when any turn failed; the last lines say how each went.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { engineTitle, MATRIX, matrixEngine } from '../test/support/engine-matrix';
import type { PrivateEngine } from '../test/support/private-engine';

const ROOT = path.resolve(__dirname, '..');
/** The suites of the matrix (issue 51): contract, lifecycle, trust, disk and isolation. */
const SUITES = [
  'engine-contract',
  'lifecycle',
  'workspace-export',
  'grade',
  'provenance',
  'sets',
  'harvest',
  'disk-limit',
  'disk-pressure',
  'harvest-caps',
  'isolation',
  'hardening',
  'secrets',
].map((f) => `test/engine/${f}.test.ts`);
const IMAGES = ['berth/busybox:local', 'berth/egress-proxy:local'];

const base = process.env.BERTH_TEST_RUN || `m${Date.now().toString(36)}`;
const files = process.env.FILES ? process.env.FILES.split(/\s+/).filter(Boolean) : SUITES;
const wanted = process.env.ENGINES ? process.env.ENGINES.split(',') : ['e20', ...MATRIX.map((e) => e.tag)];

/** The turn under way: its mocha and its engine, ended by a signal (SIGINT, SIGTERM) before this exits. */
const current: { child?: ChildProcess; engine?: PrivateEngine } = {};
let stopping = false;
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    stopping = true;
    current.child?.kill('SIGTERM');
    void (current.engine?.destroy() ?? Promise.resolve()).finally(() => process.exit(sig === 'SIGINT' ? 130 : 143));
  });
}

function mocha(run: string, env: Record<string, string>, prefix: string[] = []): Promise<number> {
  const args = [
    ...prefix,
    process.execPath,
    path.join(ROOT, 'node_modules', 'mocha', 'bin', 'mocha.js'),
    '--no-config',
    '--require',
    'tsx/cjs',
    '--require',
    './test/hooks.ts',
    '--timeout',
    '30000',
    '--reporter',
    './test/reporter.cjs',
    '--exit',
    ...files,
  ];
  const [cmd, ...rest] = args as [string, ...string[]];
  return new Promise((resolve) => {
    const child = spawn(cmd, rest, { cwd: ROOT, env: { ...process.env, BERTH_TEST_RUN: run, ...env }, stdio: 'inherit' });
    current.child = child;
    child.once('error', () => resolve(1));
    child.once('exit', (code) => {
      current.child = undefined;
      resolve(code ?? 1);
    });
  });
}

async function main(): Promise<number> {
  const results: string[] = [];
  let failed = false;
  for (const tag of wanted) {
    if (stopping) break;
    const e = MATRIX.find((m) => m.tag === tag);
    if (tag !== 'e20' && !e) throw new Error(`ENGINES: no engine ${tag} (known: e20, ${MATRIX.map((m) => m.tag).join(', ')})`);
    const title = e ? engineTitle(e) : "the machine's engine";
    process.stdout.write(`\n=== ${title} ===\n`);
    let code: number;
    let pe: PrivateEngine | undefined;
    try {
      if (!e) {
        code = await mocha(`${base}-e20`, {});
      } else {
        pe = matrixEngine(e);
        current.engine = pe;
        await pe.start();
        await pe.loadImages(IMAGES);
        code = await mocha(`${base}-${tag}`, { DOCKER_HOST: `unix://${pe.socket}` }, ['nsenter', `--net=/var/run/netns/${pe.netns}`]);
      }
    } catch (err) {
      process.stdout.write(`${title}: ${(err as Error).message}\n`);
      code = 1;
    } finally {
      if (!stopping) await pe?.destroy();
      current.engine = undefined;
    }
    failed ||= code !== 0;
    results.push(`${title}: ${code === 0 ? 'passed' : `FAILED (exit ${code})`}`);
  }
  process.stdout.write(`\n${results.join('\n')}\n`);
  return failed ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
