/**
 * An instance is bound to its source (docs/CONTRACT.md): the first reconcile records the specs
 * folder's real path (or the git URL and path) on the engine; reconcile, the controller, plan and
 * clean from another source are refused (exit 2, both named, nothing changed) until the instance
 * is moved on purpose (--move-instance). Commands run as a user types them (the CLI, in-process).
 */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { BINDING_LABELS, bindingVolumeName, LABELS } from '../../src/constants';
import { docker, requireEngine } from '../support/engine';
import { TestRepo } from '../support/git-repo';
import { Sandbox } from '../support/sandbox';

async function bindingLabels(instance: string): Promise<Record<string, string> | undefined> {
  return docker
    .getVolume(bindingVolumeName(instance))
    .inspect()
    .then(
      (v) => v.Labels ?? {},
      () => undefined,
    );
}

async function mains(sb: Sandbox): Promise<{ attempt: string; id: string; state: string }[]> {
  const f = JSON.stringify({ label: [`${LABELS.instance}=${sb.instance}`, `${LABELS.component}=main`] });
  return (await docker.listContainers({ all: true, filters: f }))
    .map((c) => ({ attempt: c.Labels[LABELS.attempt] ?? '', id: c.Id, state: c.State }))
    .sort((a, b) => (a.attempt < b.attempt ? -1 : 1));
}

describe('an instance is bound to its source (real engine)', function () {
  this.timeout(120_000);
  before(requireEngine);

  let sb: Sandbox;
  let other: string;
  beforeEach(async function () {
    sb = await Sandbox.create('bind');
    other = path.join(sb.dir, 'other-specs');
    await fs.mkdir(other);
    await fs.writeFile(path.join(other, 'b.yaml'), sb.attempt('b', 'sleep 300'));
    await sb.write('a.yaml', sb.attempt('a', 'sleep 300'));
  });
  afterEach(async function () {
    // whatever source the instance was left bound to (a failed test may leave it moved)
    const r = await sb.cli('clean', '--move-instance');
    expect(r.code, r.stderr).to.equal(0);
    await sb.dispose();
  });

  it('a second folder is refused (reconcile, --wait, the controller, plan, clean): exit 2 naming both, the first fleet untouched; --move-instance moves it', async function () {
    const first = await sb.cli('reconcile', '--once');
    expect(first.code, first.stderr).to.equal(0);
    const realA = await fs.realpath(sb.specsDir);
    expect(await bindingLabels(sb.instance)).to.deep.include({
      [BINDING_LABELS.binding]: sb.instance,
      [BINDING_LABELS.kind]: 'dir',
      [BINDING_LABELS.path]: realA,
    });
    const before = await mains(sb);
    expect(before.map((c) => `${c.attempt}:${c.state}`)).to.deep.equal(['a:running']);

    const realB = await fs.realpath(other);
    for (const args of [['reconcile', '--once'], ['reconcile', '--once', '--wait'], ['reconcile'], ['plan'], ['clean']]) {
      const r = await sb.cliWith({ '--specs': other }, ...args);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).to.equal(2);
      expect(r.stderr, args.join(' '))
        .to.contain(`instance "${sb.instance}" is bound to the specs folder ${realA}`)
        .and.contain(`not to the specs folder ${realB}`)
        .and.contain('--instance NAME')
        .and.contain('--move-instance')
        .and.contain('nothing was changed');
    }
    expect(await mains(sb), 'the first folder’s attempt still runs, the same container').to.deep.equal(before);
    expect((await sb.status('b'))?.phase, 'nothing of the second folder was made').to.equal(undefined);

    // plan --move-instance shows the move, binding nothing
    const plan = await sb.cliWith({ '--specs': other }, 'plan', '--move-instance');
    expect(plan.code, plan.stderr).to.equal(0);
    expect(plan.stderr).to.contain('this is what reconcile --move-instance would do');
    expect(plan.stdout)
      .to.match(/attempt a: collect/)
      .and.match(/attempt b: provision/);
    expect((await bindingLabels(sb.instance))?.[BINDING_LABELS.path]).to.equal(realA);

    // the same folder by another path (a link to it) is the same source
    const link = path.join(sb.dir, 'link-to-specs');
    await fs.symlink(sb.specsDir, link);
    const viaLink = await sb.cliWith({ '--specs': link }, 'reconcile', '--once');
    expect(viaLink.code, viaLink.stderr).to.equal(0);
    expect(await mains(sb)).to.deep.equal(before);

    const moved = await sb.cliWith({ '--specs': other }, 'reconcile', '--once', '--move-instance');
    expect(moved.code, moved.stderr).to.equal(0);
    expect(moved.stderr).to.contain(`moved from the specs folder ${realA} to the specs folder ${realB}`);
    expect((await bindingLabels(sb.instance))?.[BINDING_LABELS.path]).to.equal(realB);
    expect((await mains(sb)).map((c) => `${c.attempt}:${c.state}`)).to.deep.equal(['b:running']);
    // now the first folder is the other source
    const back = await sb.cli('reconcile', '--once');
    expect(back.code).to.equal(2);
    expect(back.stderr).to.contain(`is bound to the specs folder ${realB}`);
    // clean from the bound folder removes everything, the binding too
    const clean = await sb.cliWith({ '--specs': other }, 'clean');
    expect(clean.code, clean.stderr).to.equal(0);
    expect(await bindingLabels(sb.instance)).to.equal(undefined);
    expect(await mains(sb)).to.deep.equal([]);
  });

  it('the binding outlives the state folder; an instance with no binding (older berth) is bound by its next reconcile', async function () {
    // attempts made with no binding, as an older berth made them
    const pass = await sb.pass();
    expect(pass.results.every((r) => r.ok)).to.equal(true);
    expect(await bindingLabels(sb.instance)).to.equal(undefined);
    const r = await sb.cli('reconcile', '--once');
    expect(r.code, r.stderr).to.equal(0);
    expect((await bindingLabels(sb.instance))?.[BINDING_LABELS.path]).to.equal(await fs.realpath(sb.specsDir));
    const before = await mains(sb);

    await fs.rm(sb.stateDir, { recursive: true, force: true });
    const refused = await sb.cliWith({ '--specs': other }, 'reconcile', '--once');
    expect(refused.code, refused.stderr).to.equal(2);
    expect(refused.stderr).to.contain(`is bound to the specs folder ${await fs.realpath(sb.specsDir)}`);
    expect(await mains(sb)).to.deep.equal(before);
  });

  it('a git source is bound by its URL and path; a folder is refused, clean without --specs follows the git source', async function () {
    const repo = await TestRepo.create('bind');
    try {
      await repo.commit('one', { 'evals/g.yaml': sb.attempt('g', 'sleep 300') });
      const r = await sb.cli('reconcile', '--once', '--git', repo.fileUrl, '--git-path', 'evals');
      expect(r.code, r.stderr).to.equal(0);
      expect(await bindingLabels(sb.instance)).to.deep.include({
        [BINDING_LABELS.kind]: 'git',
        [BINDING_LABELS.url]: repo.fileUrl,
        [BINDING_LABELS.path]: 'evals',
      });
      const before = await mains(sb);
      expect(before.map((c) => c.attempt)).to.deep.equal(['g']);
      // another path in the same repository is another source
      const otherPath = await sb.cli('reconcile', '--once', '--git', repo.fileUrl, '--git-path', 'more');
      expect(otherPath.code, otherPath.stderr).to.equal(2);
      expect(otherPath.stderr).to.contain(`is bound to git ${repo.fileUrl} (path evals) (since `).and.contain(`not to git ${repo.fileUrl} (path more)`);
      const folder = await sb.cli('reconcile', '--once');
      expect(folder.code, folder.stderr).to.equal(2);
      expect(folder.stderr)
        .to.contain(`is bound to git ${repo.fileUrl} (path evals)`)
        .and.contain(`not to the specs folder ${await fs.realpath(sb.specsDir)}`);
      const clean = await sb.cli('clean');
      expect(clean.code, 'clean --specs <folder> of a git instance').to.equal(2);
      expect(await mains(sb)).to.deep.equal(before);
      const followed = await sb.cliWithout(['--specs'], 'clean');
      expect(followed.code, `clean without --specs follows the state folder's git source: ${followed.stderr}`).to.equal(0);
      expect(await mains(sb)).to.deep.equal([]);
      expect(await bindingLabels(sb.instance)).to.equal(undefined);
    } finally {
      await repo.remove();
    }
  });
});
