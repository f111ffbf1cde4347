/**
 * The Docker engines berth is tested on (README, "Engines"): the machine's own (Debian
 * bookworm's docker.io 20.10, API 1.41, the classic image store), and newer ones run as private
 * engines from Debian suites that scripts/engines-up.sh debootstraps with their docker.io before
 * the tests (make setup): trixie's 26.1 (API 1.45) and forky's 28.5 (API 1.51), the latter also
 * with the containerd image store on. A suite's docker.io moves with the suite; the figures here
 * are what the suites carried when the matrix was written, and a test reads the engine's own.
 */
import path from 'node:path';
import { PrivateEngine } from './private-engine';

export interface MatrixEngine {
  /** Short name: in test titles, private engines' folders and `make test-engines ENGINES=...`. */
  tag: string;
  /** The Debian suite whose docker.io it is (under BERTH_ENGINES_DIR). */
  suite: string;
  /** What the suite carried when the matrix was written (the test reads the engine's own). */
  expect: { version: string; api: string };
  containerdStore: boolean;
}

/** The private engines of the matrix, oldest first (the machine's engine is the first column, not here). */
export const MATRIX: readonly MatrixEngine[] = [
  { tag: 'e26', suite: 'trixie', expect: { version: '26.1', api: '1.45' }, containerdStore: false },
  { tag: 'e28', suite: 'forky', expect: { version: '28.5', api: '1.51' }, containerdStore: false },
  { tag: 'e28c', suite: 'forky', expect: { version: '28.5', api: '1.51' }, containerdStore: true },
];

/** Where scripts/engines-up.sh keeps the suites' roots (the same default as the script's). */
export function enginesDir(): string {
  return process.env.BERTH_ENGINES_DIR || '/var/cache/berth/engines';
}

/** A private engine of the matrix (not started): its own namespaces, data root and socket. */
export function matrixEngine(e: MatrixEngine): PrivateEngine {
  return new PrivateEngine(e.tag, { suiteRoot: path.join(enginesDir(), e.suite), containerdStore: e.containerdStore });
}

/** A matrix engine's name for humans: `Docker 28.5 (forky), containerd image store`. */
export function engineTitle(e: MatrixEngine): string {
  return `Docker ${e.expect.version} (${e.suite})${e.containerdStore ? ', containerd image store' : ''}`;
}
