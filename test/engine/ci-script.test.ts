/** scripts/ci.sh (docs/CI.md's steps) against the real engine: validate, plan, reconcile --once --wait --timeout, the report; exit codes carried through. */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { requireEngine } from '../support/engine';
import { Sandbox } from '../support/sandbox';

const REPO = path.join(__dirname, '..', '..');

function ci(sb: Sandbox, artifacts: string): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn('bash', [path.join(REPO, 'scripts', 'ci.sh')], {
      cwd: sb.dir,
      env: {
        ...process.env,
        BERTH: `node ${path.join(REPO, 'bin', 'berth-src.cjs')}`,
        BERTH_SPECS: sb.specsDir,
        BERTH_STATE: sb.stateDir,
        BERTH_RESULTS_ROOT: sb.resultsRoot,
        BERTH_INSTANCE: sb.instance,
        BERTH_LOG_LEVEL: 'warn',
        BERTH_CI_TIMEOUT: '60',
        ARTIFACTS: artifacts,
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    p.on('error', reject);
    p.on('close', (code) => resolve({ code: code ?? -1, stderr }));
  });
}

describe('CI script (real engine)', function () {
  this.timeout(120_000);
  before(requireEngine);

  let sb: Sandbox;
  beforeEach(async function () {
    sb = await Sandbox.create('ci');
  });
  afterEach(async function () {
    await sb.destroy();
  });

  it('runs every attempt and leaves the report; exit 0', async function () {
    await sb.write('a.yaml', sb.attempt('a', 'echo ok > /results/out.txt'));
    const artifacts = path.join(sb.dir, 'artifacts');
    const r = await ci(sb, artifacts);
    expect(r.code, r.stderr).to.equal(0);
    const report = JSON.parse(await fs.readFile(path.join(artifacts, 'attempts.json'), 'utf8')) as {
      items: { metadata: { name: string }; status: { phase: string } }[];
    };
    expect(report.items.map((i) => [i.metadata.name, i.status.phase])).to.deep.equal([['a', 'Succeeded']]);
    expect(await fs.readFile(path.join(sb.resultsRoot, 'a', 'run-1', 'results', 'out.txt'), 'utf8')).to.equal('ok\n');
    expect(await fs.readFile(path.join(artifacts, 'events.txt'), 'utf8')).to.match(/Finished\s+attempt\/a/);
    // the summary a later run compares with (berth compare --baseline)
    const summary = JSON.parse(await fs.readFile(path.join(artifacts, 'summary.json'), 'utf8')) as { schemaVersion: number; attempts?: { passed: number } };
    expect([summary.schemaVersion, summary.attempts?.passed]).to.deep.equal([1, 1]);
    expect(await fs.readFile(path.join(sb.resultsRoot, 'report.html'), 'utf8')).to.include('href="a/run-1/logs.txt"');
  });

  it('a failed attempt fails the job with 3, still with the report; an invalid spec with 2', async function () {
    await sb.write('a.yaml', sb.attempt('a', 'exit 1'));
    const artifacts = path.join(sb.dir, 'artifacts');
    expect((await ci(sb, artifacts)).code).to.equal(3);
    await fs.access(path.join(artifacts, 'attempts.json'));
    await fs.access(path.join(sb.resultsRoot, 'report.html'));
    await sb.write('bad.yaml', 'apiVersion: berth.dev/v1\nkind: Attempt\nmetadata: {name: Bad}\nspec: {}\n');
    expect((await ci(sb, path.join(sb.dir, 'a2'))).code).to.equal(2);
  });
});
