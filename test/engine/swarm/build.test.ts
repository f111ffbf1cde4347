/**
 * Images built from a Dockerfile on a real two-node swarm (`reconcile --backend swarm`, the
 * contract's "Images built from a Dockerfile"): the manager builds (the engine whose images the
 * planner sees), and a built image, which no registry holds, reaches a node that runs a child of
 * it by a copy from the manager (src/backend/swarm/images.ts). A set of four children over two
 * contexts runs on both nodes, each context built once; an edit in one context rebuilds it, and
 * exactly the children that use it are replaced, on whichever node, with the new image there.
 */
import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { BUILD, LABELS } from '../../../src/constants';
import type { AttemptStatus } from '../../../src/status/types';
import { imagesBuiltFor } from '../../support/engine';
import { type CliResult, Sandbox } from '../../support/sandbox';
import { nothingLeftOnSwarm, swarmCli } from '../../support/swarm-cli';
import { type TestSwarm, twoNodeSwarm } from '../../support/swarm';

const run = promisify(execFile);

const SET = `apiVersion: berth.dev/v1
kind: AttemptSet
metadata:
  name: evals
spec:
  matrix:
    task: [a, b]
    seed: {range: [0, 2]}
  template:
    build:
      context: ./tasks/\${{ matrix.task }}
    network: {mode: none}
    command: [sh, -c, 'sleep 2; cat /task.txt > /results/out.txt']
`;

const DOCKERFILE = 'FROM berth/busybox:local\nCOPY task.txt /task.txt\n';
const CHILDREN = ['evals-0-a', 'evals-1-a', 'evals-0-b', 'evals-1-b'];

describe('--backend swarm: images built from a Dockerfile on a real two-node swarm', function () {
  this.timeout(300_000);
  let s: TestSwarm;

  before(async () => {
    s = await twoNodeSwarm();
  });

  /** The builds the manager's engine made (image `tag` events) since `since` (s), per tag. */
  async function builds(since: number): Promise<Map<string, number>> {
    const { stdout } = await run('docker', [
      '-H',
      s.manager.address,
      'events',
      '--since',
      String(since),
      '--until',
      String(Math.ceil(Date.now() / 1000) + 1),
      '--filter',
      'type=image',
      '--filter',
      'event=tag',
      '--format',
      '{{index .Actor.Attributes "name"}}',
    ]);
    const out = new Map<string, number>();
    for (const l of stdout.split('\n').filter((x) => x.startsWith(`${BUILD.repository}/`))) {
      const tag = l.replace(/:latest$/, '');
      out.set(tag, (out.get(tag) ?? 0) + 1);
    }
    return out;
  }

  /** The image each child ran, the node its run was on, its run number, and what it wrote. */
  async function children(sb: Sandbox): Promise<Map<string, { rec: AttemptStatus; image: string; node: string; out: string }>> {
    const loaded = JSON.parse((await swarmCli(sb, s, 'get', '-o', 'json')).stdout) as { items: { metadata: { name: string }; spec?: { image?: string } }[] };
    const images = new Map(loaded.items.map((i) => [i.metadata.name, i.spec?.image ?? '']));
    const out = new Map<string, { rec: AttemptStatus; image: string; node: string; out: string }>();
    for (const [name, rec] of await sb.store().loadAll()) {
      const text = await fs.readFile(path.join(rec.resultsDir ?? '', 'out.txt'), 'utf8').catch(() => '');
      out.set(name, { rec, image: images.get(name) ?? '', node: (rec.containerId ?? '').split('@')[1] ?? '', out: text });
    }
    return out;
  }

  it('a set with build: runs on both nodes, each context built once on the manager; an edit in a context rebuilds it and replaces exactly its children', async () => {
    const sb = await Sandbox.create('sw-build');
    try {
      await sb.write('tasks/a/Dockerfile', DOCKERFILE);
      await sb.write('tasks/a/task.txt', 'task a');
      await sb.write('tasks/b/Dockerfile', DOCKERFILE);
      await sb.write('tasks/b/task.txt', 'task b');
      await sb.write('evals.yaml', SET);
      const since = Math.floor(Date.now() / 1000) - 1;
      const first: CliResult = await swarmCli(sb, s, 'reconcile', '--once', '--wait', '--timeout', '200', '--max-running', '4');
      expect(first.code, first.stdout + first.stderr).to.equal(0);
      const c1 = await children(sb);
      expect([...c1.keys()].sort()).to.deep.equal([...CHILDREN].sort());
      for (const [n, c] of c1) {
        expect([c.rec.phase, c.rec.exitCode, c.rec.run], `${n}: ${JSON.stringify(c.rec)}`).to.deep.equal(['Succeeded', 0, 1]);
        expect(c.out, n).to.equal(`task ${n.slice(-1)}`);
      }
      const [tagA, tagB] = [c1.get('evals-0-a')?.image ?? '', c1.get('evals-0-b')?.image ?? ''];
      expect(tagA).to.match(new RegExp(`^${BUILD.repository}/[0-9a-f]{16}$`));
      expect(c1.get('evals-1-a')?.image).to.equal(tagA);
      expect(tagB).to.not.equal(tagA);
      // both nodes ran children; each node that ran one holds the manager's very image (copied: no registry holds it)
      expect(new Set([...c1.values()].map((c) => c.node)), 'the children ran on both nodes').to.deep.equal(new Set(s.nodes.map((n) => n.id)));
      for (const c of c1.values()) {
        const node = s.nodes.find((n) => n.id === c.node);
        const want = (await s.manager.docker.getImage(c.image).inspect()).Id;
        expect((await node?.docker.getImage(c.image).inspect())?.Id, `${c.rec.name} on node ${node?.index}`).to.equal(want);
      }
      // one build per context, on the manager; the worker built nothing
      const b1 = await builds(since);
      expect([b1.get(tagA), b1.get(tagB)], JSON.stringify([...b1])).to.deep.equal([1, 1]);
      for (const w of s.workers) {
        const built = await w.docker.listImages({ filters: JSON.stringify({ label: [`${LABELS.build}`] }) });
        const tags = built.flatMap((i) => i.RepoTags ?? []);
        expect(
          tags.every((t) => t === `${tagA}:latest` || t === `${tagB}:latest`),
          tags.join(', '),
        ).to.equal(true);
      }

      // an edit in a's context: a is rebuilt, a's children (on whichever node) run again with the new image, b's are left as they were
      await sb.write('tasks/a/task.txt', 'task a, edited');
      const since2 = Math.floor(Date.now() / 1000) - 1;
      const second = await swarmCli(sb, s, 'reconcile', '--once', '--wait', '--timeout', '200', '--max-running', '4');
      expect(second.code, second.stdout + second.stderr).to.equal(0);
      const c2 = await children(sb);
      expect(CHILDREN.map((n) => c2.get(n)?.rec.run)).to.deep.equal([2, 2, 1, 1]);
      for (const n of ['evals-0-b', 'evals-1-b']) expect(c2.get(n)?.rec.containerId, `${n} untouched`).to.equal(c1.get(n)?.rec.containerId);
      const tagA2 = c2.get('evals-0-a')?.image ?? '';
      expect(tagA2)
        .to.match(new RegExp(`^${BUILD.repository}/[0-9a-f]{16}$`))
        .and.not.equal(tagA);
      expect(c2.get('evals-1-a')?.image).to.equal(tagA2);
      expect(c2.get('evals-0-b')?.image).to.equal(tagB);
      const b2 = await builds(since2);
      expect([...b2], 'only a was built again, once').to.deep.equal([[tagA2, 1]]);
      for (const n of ['evals-0-a', 'evals-1-a']) {
        const c = c2.get(n);
        expect([c?.rec.phase, c?.out], n).to.deep.equal(['Succeeded', 'task a, edited']);
        const node = s.nodes.find((x) => x.id === c?.node);
        expect((await node?.docker.getImage(tagA2).inspect())?.Id, `${n} on node ${node?.index}`).to.equal(
          (await s.manager.docker.getImage(tagA2).inspect()).Id,
        );
      }
    } finally {
      const c = await swarmCli(sb, s, 'clean');
      expect(c.code, c.stderr).to.equal(0);
      // the images built for this instance (its build records), on every node (the copies carry the build's label)
      for (const n of s.nodes) for (const i of await imagesBuiltFor(sb, n.docker)) await n.docker.getImage(i.Id).remove({ force: true });
      await sb.dispose();
    }
    await nothingLeftOnSwarm(s, sb.instance);
  });
});
