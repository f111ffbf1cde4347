/** The example folders as a new user runs them: specs/ converges clean, examples/lifecycle ends 3. */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { LABELS } from '../../src/constants';
import { docker, imagesBuiltFor, removeBuilt, requireEngine, TEST_RUN } from '../support/engine';
import { makeTestImage, removeImage, TestRegistry } from '../support/registry';
import { Sandbox } from '../support/sandbox';

const REPO = path.resolve(__dirname, '..', '..');

async function useExamples(sb: Sandbox, folder: string): Promise<void> {
  await fs.rm(sb.specsDir, { recursive: true, force: true });
  await fs.cp(path.join(REPO, folder), sb.specsDir, { recursive: true });
}

describe('example specs (real engine)', function () {
  this.timeout(90_000);
  before(requireEngine);

  let sb: Sandbox;
  beforeEach(async function () {
    sb = await Sandbox.create('ex');
  });
  afterEach(async function () {
    await sb.destroy();
    await removeBuilt(sb); // examples/builds' images, once their containers are gone
    const f = JSON.stringify({ label: [`${LABELS.instance}=${sb.instance}`] });
    expect(await docker.listContainers({ all: true, filters: f }), 'berth clean leaves nothing').to.have.length(0);
  });

  it('specs/: every example succeeds, and a second plan shows no changes', async function () {
    await useExamples(sb, 'specs');
    // The example set's m2 fails a task by its score, as an eval does: with --fail-on infra that is exit 0.
    const r = await sb.cli('reconcile', '--once', '--wait', '--fail-on', 'infra');
    expect(r.code, r.stderr + r.stdout).to.equal(0);
    const lines = r.stdout.split('\n').filter(Boolean);
    expect(lines.at(-1)).to.match(/^\d+ passed, 1 failed, 0 infrastructure$/);
    expect(
      lines.slice(1, -1).every((l) => /\bSucceeded\b/.test(l)),
      r.stdout,
    ).to.equal(true);
    const plan = await sb.cli('plan', '--detailed-exitcode');
    expect(plan.code, plan.stdout).to.equal(0);
    expect(plan.stdout).to.match(/No changes/);
    expect(await fs.readFile(path.join(sb.resultsRoot, 'egress-allowlist', 'run-1', 'egress.jsonl'), 'utf8')).to.match(/"allowed":false/);
    // The example AttemptSet: m1 passes both tasks, m2 only `count`.
    const summary = await sb.cli('summary', 'eval-demo', '-o', 'json');
    expect(JSON.parse(summary.stdout).sets[0]).to.include({ name: 'eval-demo', n: 4, passed: 3, failed: 1, infra: 0 });
    // The README's report: every example in it, the set's matrix, links into each run's folder.
    const report = await sb.cli('report');
    expect(report.code, report.stderr).to.equal(0);
    const html = await fs.readFile(path.join(sb.resultsRoot, 'report.html'), 'utf8');
    const data = JSON.parse(/<script type="application\/json" id="report-data">([\s\S]*?)<\/script>/.exec(html)?.[1] as string) as {
      attempts: { name: string }[];
      sets: { name: string }[];
    };
    expect(data.attempts).to.have.length(11);
    expect(data.sets.map((s) => s.name)).to.deep.equal(['eval-demo']);
    expect(html).to.include('href="hello/run-1/logs.txt"');
  });

  it('examples/lifecycle: the right phases, exit 3, results with logs, status and manifest', async function () {
    await useExamples(sb, 'examples/lifecycle');
    const r = await sb.cli('reconcile', '--once', '--wait');
    expect(r.code, r.stderr).to.equal(3);
    const phase = async (n: string) => {
      const s = await sb.status(n);
      return [s?.phase, s?.reason];
    };
    expect(await phase('lc-success')).to.deep.equal(['Succeeded', 'Completed']);
    expect(await phase('lc-failure')).to.deep.equal(['Failed', 'Error']);
    expect(await phase('lc-timeout')).to.deep.equal(['TimedOut', 'DeadlineExceeded']);
    expect(await phase('lc-fixture')).to.deep.equal(['Succeeded', 'Completed']);
    expect(await phase('lc-secret')).to.deep.equal(['Succeeded', 'Completed']);
    for (const n of ['lc-success', 'lc-failure', 'lc-timeout', 'lc-fixture', 'lc-secret']) {
      const run = path.join(sb.resultsRoot, n, 'run-1');
      for (const f of ['logs.txt', 'status.json', 'manifest.json']) await fs.access(path.join(run, f));
    }
    expect(await fs.readFile(path.join(sb.resultsRoot, 'lc-fixture', 'run-1', 'results', 'count.txt'), 'utf8')).to.equal('3\n');
    expect(await fs.readFile(path.join(sb.resultsRoot, 'lc-failure', 'run-1', 'logs.txt'), 'utf8')).to.equal('something broke\n');
  });

  it('examples/builds: 4 children over 2 task folders, 2 builds, every child passes', async function () {
    await useExamples(sb, 'examples/builds');
    const r = await sb.cli('reconcile', '--once', '--wait', '--max-running', '4');
    expect(r.code, r.stderr + r.stdout).to.equal(0);
    for (const [name, out] of [
      ['builds-0-add', 'add: ok'],
      ['builds-1-add', 'add: ok'],
      ['builds-0-mul', 'mul: ok'],
      ['builds-1-mul', 'mul: ok'],
    ] as const)
      expect(await fs.readFile(path.join(sb.resultsRoot, name, 'run-1', 'results', 'out.txt'), 'utf8'), name).to.equal(`${out}\n`);
    const built = await imagesBuiltFor(sb);
    expect(built).to.have.length(2);
  });

  it('examples/registry: the private image is pulled from the registry the tests start (its address put in), and the set runs one digest', async function () {
    const reg = await TestRegistry.start();
    const local = `berth-test/${TEST_RUN}-example:1`;
    let ref = '';
    try {
      await makeTestImage(local, 64 * 1024);
      ref = await reg.push(local, 'evals/hello:1');
      await removeImage(local);
      await useExamples(sb, 'examples/registry');
      const f = path.join(sb.specsDir, 'attempts.yaml');
      await fs.writeFile(f, (await fs.readFile(f, 'utf8')).replaceAll('registry.example:5000', reg.host));
      const cfg = path.join(sb.dir, 'registry.json');
      await fs.writeFile(cfg, JSON.stringify({ auths: reg.authEntry() }), { mode: 0o600 });
      const r = await sb.cli('reconcile', '--once', '--wait', '--timeout', '60', '--registry-config', cfg);
      expect(r.code, r.stderr + r.stdout).to.equal(0);
      const recs = await sb.store().loadAll();
      expect([...recs.values()].map((x) => x.phase)).to.deep.equal(['Succeeded', 'Succeeded', 'Succeeded', 'Succeeded']);
      const digest = (await docker.getImage(ref).inspect()).RepoDigests?.[0];
      for (const x of recs.values()) expect(x.image?.repoDigests, x.name).to.include(digest);
    } finally {
      if (ref) await removeImage(ref);
      await removeImage(local);
      await reg.stop();
    }
  });
});
