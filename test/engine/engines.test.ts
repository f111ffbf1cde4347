/**
 * The compatibility matrix's fast part (the whole of it: `make test-engines`, scripts/test-engines.ts):
 * on each newer engine of the matrix (test/support/engine-matrix.ts: Docker 26.1, 28.5, and 28.5
 * with the containerd image store, each a private engine from a Debian suite's docker.io that
 * make setup debootstrapped), started once for this file: the engine contract suite, `berth
 * version` (the engine's version, API, image store; berth talks min(its API, the newest berth
 * knows)), and berth as a user there runs it (the CLI in the engine's network namespace, its
 * DOCKER_HOST the engine's socket): an Attempt and an AttemptSet with a grader get the verdicts
 * they get on the machine's engine and a provenance record of that engine's image ids; on 28.5
 * with the containerd store, also the README's first command (`make run`: specs/) and a
 * multi-platform image (an OCI index of two platforms) run, recorded and pinned by its index.
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ENGINE_API } from '../../src/constants';
import type { Summary } from '../../src/sets/summary';
import type { AttemptStatus, GradeRecord } from '../../src/status/types';
import { engineContract } from '../contract/engine.contract';
import { realEngineHarness } from '../support/contract-harness';
import { requireEngine, TEST_IMAGE } from '../support/engine';
import { engineTitle, MATRIX, matrixEngine } from '../support/engine-matrix';
import { multiPlatformArchive } from '../support/oci-archive';
import type { PrivateEngine } from '../support/private-engine';

const REPO = path.resolve(__dirname, '..', '..');
const BIN = path.join(REPO, 'bin', 'berth.js');
const PROXY_IMAGE = 'berth/egress-proxy:local';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** berth as a user on the engine's machine runs it: in the engine's network namespace, DOCKER_HOST its socket. */
function berth(pe: PrivateEngine, dir: string, args: string[]): Promise<Run> {
  const globals = ['--specs', path.join(dir, 'specs'), '--state', path.join(dir, 'state'), '--results-root', path.join(dir, 'results')];
  // an instance of the test's own (an instance is bound to its specs folder)
  const instance = path.basename(dir).toLowerCase();
  const p = spawn('nsenter', [`--net=/var/run/netns/${pe.netns}`, process.execPath, BIN, ...args, ...globals, '--instance', instance], {
    env: { ...process.env, DOCKER_HOST: `unix://${pe.socket}` },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  p.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
  p.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
  return new Promise((resolve, reject) => {
    p.once('error', reject);
    p.once('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

/** A plain attempt and a graded set of two children: one the grader passes, one it fails. */
const GRADED = `apiVersion: berth.dev/v1
kind: Attempt
metadata: {name: plain}
spec:
  image: ${TEST_IMAGE}
  command: [sh, -c, 'echo plain > /results/out.txt']
---
apiVersion: berth.dev/v1
kind: AttemptSet
metadata: {name: graded}
spec:
  matrix:
    answer: [right, wrong]
  template:
    image: ${TEST_IMAGE}
    command: [sh, -c, 'echo \${{ matrix.answer }} > solution.txt']
    fixture: ./task
    grade:
      command: [sh, -c, 'if grep -q right solution.txt; then echo 1; else echo 0; fi > /results/score.json']
  score: {file: score.json, pass: 1}
`;

describe('the compatibility matrix (private engines of newer Debian suites)', function () {
  this.timeout(180_000);
  before(requireEngine);

  for (const e of MATRIX) {
    describe(engineTitle(e), function () {
      const pe = matrixEngine(e);
      let dir: string;
      before(async function () {
        await pe.start();
        await pe.loadImages(e.containerdStore ? [TEST_IMAGE, PROXY_IMAGE] : [TEST_IMAGE]);
      });
      after(async function () {
        await pe.destroy();
      });
      beforeEach(async function () {
        dir = await fs.mkdtemp(path.join(os.tmpdir(), `berth-${e.tag}-`));
      });
      afterEach(async function () {
        if (dir) await fs.rm(dir, { recursive: true, force: true });
      });

      it(`berth version names the engine, its API and image store; berth talks min(its API, ${ENGINE_API.newest})`, async function () {
        const v = await pe.docker.version();
        expect(v.Version).to.match(new RegExp(`^${e.expect.version.replace('.', '\\.')}\\.`));
        const r = await berth(pe, dir, ['version', '-o', 'json']);
        expect(r.code, r.stderr).to.equal(0);
        const { isolation, ...engine } = (JSON.parse(r.stdout) as { engine: Record<string, unknown> & { isolation?: Record<string, unknown> } }).engine;
        const talks = Number(v.ApiVersion.split('.')[1]) > Number(ENGINE_API.newest.split('.')[1]) ? ENGINE_API.newest : v.ApiVersion;
        expect(engine).to.deep.equal({
          version: v.Version,
          apiVersion: v.ApiVersion,
          talks,
          imageStore: e.containerdStore ? 'containerd' : 'classic',
          driver: e.containerdStore ? 'overlayfs' : 'overlay2',
        });
        // the isolation it gives every container, as its /info says (the storage driver its own)
        expect(isolation).to.deep.include({ storageDriver: e.containerdStore ? 'overlayfs' : 'overlay2', defaultRuntime: 'runc', rootless: false });
        const text = await berth(pe, dir, ['version']);
        expect(text.stdout).to.include(`engine ${v.Version} (API ${v.ApiVersion})`);
        expect(text.stdout).to.include(e.containerdStore ? 'containerd image store (overlayfs)' : 'classic image store (overlay2)');
      });

      engineContract(engineTitle(e), () => realEngineHarness(pe.docker, { before: async () => undefined, after: async () => undefined }), { registry: false });

      it('an Attempt and an AttemptSet with a grader: the same verdicts, and provenance of this engine', async function () {
        await fs.mkdir(path.join(dir, 'specs', 'task'), { recursive: true });
        await fs.writeFile(path.join(dir, 'specs', 'task', 'README'), 'answer in solution.txt\n');
        await fs.writeFile(path.join(dir, 'specs', 'a.yaml'), GRADED);
        const r = await berth(pe, dir, ['reconcile', '--once', '--wait']);
        expect(r.code, r.stderr + r.stdout).to.equal(3);
        expect(r.stdout.trim().split('\n').at(-1)).to.equal('2 passed, 1 failed, 0 infrastructure');
        const id = (await pe.docker.getImage(TEST_IMAGE).inspect()).Id;
        const status = async (n: string) => JSON.parse(await fs.readFile(path.join(dir, 'results', n, 'run-1', 'status.json'), 'utf8')) as AttemptStatus;
        const plain = await status('plain');
        expect(plain.phase).to.equal('Succeeded');
        expect(plain.image).to.deep.include({ ref: TEST_IMAGE, id });
        // the classic store lists no repo digest for a loaded image; the containerd store, its id under its name
        expect(plain.image?.repoDigests).to.deep.equal(e.containerdStore ? [`berth/busybox@${id}`] : []);
        const summary = JSON.parse((await berth(pe, dir, ['summary', 'graded', '-o', 'json'])).stdout) as Summary;
        expect(summary.sets[0]).to.include({ n: 2, passed: 1, failed: 1, infra: 0 });
        for (const [answer, passed] of [
          ['right', true],
          ['wrong', false],
        ] as const) {
          const child = summary.sets[0]?.children.find((c) => c.name.endsWith(answer));
          expect(child, JSON.stringify(summary.sets[0]?.children)).to.not.equal(undefined);
          const st = await status(child?.name as string);
          expect(st.image, answer).to.deep.include({ id, pinned: true });
          const grade = (
            JSON.parse(await fs.readFile(path.join(dir, 'results', child?.name as string, 'run-1', 'grade-1', 'status.json'), 'utf8')) as { grade: GradeRecord }
          ).grade;
          expect(grade, answer).to.deep.include({ imageId: id, score: passed ? 1 : 0, passed });
        }
        const pins = JSON.parse(await fs.readFile(path.join(dir, 'state', path.basename(dir).toLowerCase(), 'sets', 'graded.json'), 'utf8')) as {
          images: Record<string, { id: string }>;
        };
        expect(pins.images[TEST_IMAGE]?.id).to.equal(id);
        expect((await berth(pe, dir, ['clean'])).code).to.equal(0);
      });

      if (e.containerdStore) {
        it("the README's first command (make run: specs/) converges as on the machine's engine", async function () {
          await fs.cp(path.join(REPO, 'specs'), path.join(dir, 'specs'), { recursive: true });
          const r = await berth(pe, dir, ['reconcile', '--once', '--wait', '--fail-on', 'infra']);
          expect(r.code, r.stderr + r.stdout).to.equal(0);
          const lines = r.stdout.split('\n').filter(Boolean);
          expect(lines.at(-1)).to.match(/^\d+ passed, 1 failed, 0 infrastructure$/);
          expect(
            lines.slice(1, -1).every((l) => /\bSucceeded\b/.test(l)),
            r.stdout,
          ).to.equal(true);
          expect(await fs.readFile(path.join(dir, 'results', 'egress-allowlist', 'run-1', 'egress.jsonl'), 'utf8')).to.match(/"allowed":false/);
          expect((await berth(pe, dir, ['clean'])).code).to.equal(0);
        });

        it('a multi-platform image (an index of two platforms): recorded, pinned and attested by its index digest', async function () {
          const { file, index, manifests } = await multiPlatformArchive(TEST_IMAGE, 'berth-test/multi:v1', dir);
          await pe.docker.loadImage(file).then((s) => new Promise((res, rej) => pe.docker.modem.followProgress(s, (err) => (err ? rej(err) : res(undefined)))));
          expect((await pe.docker.getImage('berth-test/multi:v1').inspect()).Id).to.equal(index);
          await fs.mkdir(path.join(dir, 'specs', 'task'), { recursive: true });
          await fs.writeFile(path.join(dir, 'specs', 'task', 'README'), 'answer in solution.txt\n');
          await fs.writeFile(path.join(dir, 'specs', 'a.yaml'), GRADED.replaceAll(TEST_IMAGE, 'berth-test/multi:v1'));
          const r = await berth(pe, dir, ['reconcile', '--once', '--wait']);
          expect(r.code, r.stderr + r.stdout).to.equal(3);
          expect(r.stdout.trim().split('\n').at(-1)).to.equal('2 passed, 1 failed, 0 infrastructure');
          const plain = JSON.parse(await fs.readFile(path.join(dir, 'results', 'plain', 'run-1', 'status.json'), 'utf8')) as AttemptStatus;
          expect(plain.image).to.deep.include({
            ref: 'berth-test/multi:v1',
            id: index,
            repoDigests: [`berth-test/multi@${index}`],
            platformManifest: manifests.amd64,
          });
          const pins = JSON.parse(await fs.readFile(path.join(dir, 'state', path.basename(dir).toLowerCase(), 'sets', 'graded.json'), 'utf8')) as {
            images: Record<string, { id: string }>;
          };
          expect(pins.images['berth-test/multi:v1']?.id).to.equal(index);
          expect((await berth(pe, dir, ['clean'])).code).to.equal(0);
        });
      }
    });
  }
});
