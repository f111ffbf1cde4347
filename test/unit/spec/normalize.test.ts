/** Normalization: defaults filled in, env split, memory in bytes, paths resolved, lists sorted. */
import { expect } from 'chai';
import * as path from 'node:path';
import { loadSpecs } from '../../../src/spec/loader';
import type { NormalizedAttempt } from '../../../src/spec/types';
import { GOOD, cleanupTemp, doc, loadOne, tempDir } from './helpers';

async function good(name: string): Promise<NormalizedAttempt> {
  const r = await loadSpecs({ specsDir: GOOD, resultsRoot: tempDir() });
  const s = r.specs.find((x) => x.spec.name === name);
  if (!s) throw new Error(`no ${name}`);
  return s.spec;
}

describe('spec/normalize', () => {
  afterEach(cleanupTemp);

  it('fills in every default for a minimal spec', async () => {
    expect(await good('good-minimal')).to.deep.equal({
      apiVersion: 'berth.dev/v1',
      kind: 'Attempt',
      name: 'good-minimal',
      labels: {},
      image: 'berth/busybox:local',
      pullPolicies: { main: 'IfNotPresent', grade: 'IfNotPresent', sidecars: {} },
      command: null,
      workingDir: '/workspace',
      env: {},
      secretEnv: {},
      secrets: [],
      fixture: null,
      fixtureDigest: null,
      fixtureLayers: [],
      results: 'good-minimal',
      network: { mode: 'none', egress: [] },
      credentials: [],
      volumes: [],
      resources: { cpus: null, memoryBytes: null, pids: 512, diskBytes: null },
      deadlineSeconds: null,
      retries: 0,
      ttlSecondsAfterFinished: null,
      user: null,
      readOnlyRootFilesystem: false,
      sandbox: false,
      sidecars: [],
      grade: null,
      workspace: { export: 'changes', exclude: [], maxBytes: 256 * 1024 ** 2, maxFiles: 100_000, gitignore: true },
      harvest: { maxBytes: 1024 ** 3, maxFiles: 100_000 },
    });
  });

  it('carries every field of a full spec, resolved', async () => {
    const s = await good('good-full');
    expect(s.fixtureDigest).to.match(/^[0-9a-f]{64}$/);
    expect(s.fixtureLayers).to.deep.equal([{ path: path.join(GOOD, 'fixtures', 'task'), digest: s.fixtureDigest }]);
    expect({ ...s, fixtureDigest: '<digest>', fixtureLayers: '<layers>' }).to.deep.equal({
      apiVersion: 'berth.dev/v1',
      kind: 'Attempt',
      name: 'good-full',
      labels: { suite: 'demo', model: 'm1', 'example.com/team': 'evals' },
      image: 'berth/busybox:local',
      pullPolicies: { main: 'IfNotPresent', grade: 'IfNotPresent', sidecars: {} },
      command: ['sh', '-c', 'cp /workspace/input.txt /results/output.txt'],
      workingDir: '/workspace',
      env: { TASK_ID: '42' },
      secretEnv: { API_KEY: 'api-key' },
      secrets: [
        { name: 'api-key', fromEnv: 'OPENAI_API_KEY' },
        { name: 'token', fromFile: path.join(GOOD, 'secrets', 'token') },
      ],
      fixture: path.join(GOOD, 'fixtures', 'task'),
      fixtureDigest: '<digest>',
      fixtureLayers: '<layers>',
      results: 'task-42',
      network: { mode: 'isolated', egress: ['*.pypi.org:443', '10.0.0.1:8080', 'api.example.com:443'] },
      credentials: [],
      volumes: [
        { name: 'cache', mountPath: '/cache', readOnly: false, sizeBytes: null },
        { name: 'data', mountPath: '/data', readOnly: true, sizeBytes: null },
      ],
      resources: { cpus: 1.5, memoryBytes: 1024 ** 3, pids: 256, diskBytes: null },
      deadlineSeconds: 1800,
      retries: 2,
      ttlSecondsAfterFinished: 3600,
      user: null,
      readOnlyRootFilesystem: false,
      sandbox: false,
      sidecars: [],
      grade: null,
      workspace: { export: 'changes', exclude: [], maxBytes: 256 * 1024 ** 2, maxFiles: 100_000, gitignore: true },
      harvest: { maxBytes: 1024 ** 3, maxFiles: 100_000 },
    });
  });

  it('sorts secrets, volumes and egress, lowercases egress hosts and drops repeats', async () => {
    const r = await loadOne(
      doc(
        'x',
        `  secrets: [{name: z, fromEnv: Z}, {name: a, fromEnv: A}]
  volumes: [{name: v2, mountPath: /b/}, {name: v1, mountPath: /a}]
  network: {mode: isolated, egress: [B.example.com:1, a.example.com:2]}
  workingDir: /work//dir/
  results: out/./x
`,
      ),
    );
    expect(r.errors).to.deep.equal([]);
    const s = r.specs[0]?.spec;
    expect(s?.secrets.map((x) => x.name)).to.deep.equal(['a', 'z']);
    expect(s?.volumes).to.deep.equal([
      { name: 'v1', mountPath: '/a', readOnly: false, sizeBytes: null },
      { name: 'v2', mountPath: '/b', readOnly: false, sizeBytes: null },
    ]);
    expect(s?.network.egress).to.deep.equal(['a.example.com:2', 'b.example.com:1']);
    expect(s?.workingDir).to.equal('/work/dir');
    expect(s?.results).to.equal('out/x');
  });

  it('fills spec.workspace with its defaults and reads its caps as quantities', async () => {
    const none = await loadOne(doc('x'));
    expect(none.specs[0]?.spec.workspace).to.deep.equal({ export: 'changes', exclude: [], maxBytes: 256 * 1024 ** 2, maxFiles: 100_000, gitignore: true });
    const some = await loadOne(doc('x', `  workspace:\n    exclude: [dist, '*.log']\n    maxBytes: 1G\n    gitignore: false\n`));
    expect(some.specs[0]?.spec.workspace).to.deep.equal({ export: 'changes', exclude: ['dist', '*.log'], maxBytes: 1e9, maxFiles: 100_000, gitignore: false });
  });

  it('refuses a bad spec.workspace naming the file, line and field', async () => {
    const r = await loadOne(doc('x', `  workspace:\n    maxBytes: 0\n    export: all\n`));
    const got = r.errors.map((e) => `${path.basename(e.file)}:${e.line} ${e.path} [${e.code}]`).sort();
    expect(got).to.have.length(2);
    expect(got).to.deep.equal(['spec.yaml:8 spec.workspace.maxBytes [schema]', 'spec.yaml:9 spec.workspace.export [schema]']);
  });

  it('gives memory in bytes whichever way it is written', async () => {
    for (const [m, bytes] of [
      ['64Mi', 64 * 1024 ** 2],
      ['1G', 1e9],
      ['67108864', 67108864],
      ['0.5Gi', 512 * 1024 ** 2],
    ] as const) {
      const r = await loadOne(doc('x', `  resources: {memory: ${m}}\n`));
      expect(r.specs[0]?.spec.resources.memoryBytes, m).to.equal(bytes);
    }
  });
});
