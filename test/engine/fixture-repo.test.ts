/**
 * A repository used as a fixture (real engine): its own YAML (mkdocs.yml, CI workflows,
 * docker-compose.yml, a Kubernetes manifest) is not read as specs, so validate, plan,
 * reconcile --once --wait and get all work with it as the fixture of every child of a set, and
 * the repository's files are in each child's working folder. A second plan reads no fixture
 * file (the digests are kept on disk).
 */
import { expect } from 'chai';
import path from 'node:path';
import { clearContentCache, contentCacheStats } from '../../src/spec/content-cache';
import { requireEngine } from '../support/engine';
import { Sandbox } from '../support/sandbox';

const SET = `apiVersion: berth.dev/v1
kind: AttemptSet
metadata:
  name: repo
spec:
  matrix:
    task: [lint, test]
  template:
    image: berth/busybox:local
    command: [sh, -c, 'test -f mkdocs.yml && test -f docker-compose.yml && test -f .github/workflows/ci.yml && test -f src/lib.py && echo \${{ matrix.task }} > /results/out.txt']
    fixture: ./repos/lib
`;

describe('a repository with its own YAML as the fixture of a set (real engine)', function () {
  this.timeout(180_000);
  before(requireEngine);

  let sb: Sandbox;
  const savedCache = process.env.BERTH_CACHE_DIR;
  beforeEach(async function () {
    sb = await Sandbox.create('fixrepo');
    process.env.BERTH_CACHE_DIR = path.join(sb.dir, 'cache');
  });
  afterEach(async function () {
    if (savedCache === undefined) delete process.env.BERTH_CACHE_DIR;
    else process.env.BERTH_CACHE_DIR = savedCache;
    await sb.destroy();
  });

  it('validate, plan, reconcile --once --wait and get all work; validate -v names the folder it skipped', async function () {
    await sb.write('repos/lib/mkdocs.yml', 'site_name: lib\nnav: [index.md]\n');
    await sb.write('repos/lib/.github/workflows/ci.yml', 'on: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n');
    await sb.write('repos/lib/docker-compose.yml', 'services:\n  db:\n    image: postgres:16\n');
    await sb.write('repos/lib/deploy/k8s.yaml', 'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: lib\n');
    await sb.write('repos/lib/src/lib.py', 'print("hello")\n');
    await sb.write('set.yaml', SET);

    const v = await sb.cli('validate', '-v');
    expect(v.code, v.stderr + v.stdout).to.equal(0);
    // the repository is left out whole, never walked: a fixture of the set, found before the walk reached it
    expect(v.stdout).to.match(/skipped .*repos\/lib\/: a fixture or fromDir of .*set\.yaml/);
    expect(v.stdout).not.to.match(/mkdocs|docker-compose|k8s\.yaml/);
    expect(v.stdout).to.match(/1 file, 2 attempts \(1 AttemptSet\): all valid/);

    const plan = await sb.cli('plan');
    expect(plan.code, plan.stderr).to.equal(0);
    expect(plan.stdout).to.include('repo-lint');
    expect(plan.stdout).to.include('repo-test');

    // A second plan in a "new process" (nothing kept in memory) reads no fixture file.
    clearContentCache();
    const reads = contentCacheStats().misses;
    const again = await sb.cli('plan');
    expect(again.code, again.stderr).to.equal(0);
    expect(contentCacheStats().misses - reads).to.equal(0);

    const run = await sb.cli('reconcile', '--once', '--wait');
    expect(run.code, run.stderr + run.stdout).to.equal(0);
    const recs = await sb.store().loadAll();
    expect([...recs.keys()].sort()).to.deep.equal(['repo-lint', 'repo-test']);
    for (const r of recs.values()) expect(r.phase, `${r.name}: ${r.message ?? ''}`).to.equal('Succeeded');

    const get = await sb.cli('get', '-o', 'json');
    expect(get.code, get.stderr).to.equal(0);
    const items = (JSON.parse(get.stdout) as { items: { metadata: { name: string }; status: { phase: string } }[] }).items;
    expect(items.map((i) => [i.metadata.name, i.status.phase]).sort()).to.deep.equal([
      ['repo-lint', 'Succeeded'],
      ['repo-test', 'Succeeded'],
    ]);

    // Converged: nothing to do, and the repository's YAML is still no spec.
    const settled = await sb.cli('plan', '--detailed-exitcode');
    expect(settled.code, settled.stdout + settled.stderr).to.equal(0);
  });
});
