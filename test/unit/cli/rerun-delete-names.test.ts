/**
 * How rerun and delete (and describe, logs, events) take their names, through the whole command
 * line on the fake engine: NAME, attempt/NAME as `get -o name` prints them, set/NAME for an
 * AttemptSet's attempts, --all, and what does not exist. What a rerun and a delete do to runs,
 * containers and results folders is on the real engine: test/engine/cli-rerun-delete.test.ts.
 */
import { expect } from 'chai';
import { LABELS } from '../../../src/constants';
import { FakeSandbox } from '../../support/fake-sandbox';

const GRID = `apiVersion: berth.dev/v1
kind: AttemptSet
metadata: {name: grid, labels: {suite: names}}
spec:
  matrix: {x: [c, a]}
  template:
    image: berth/busybox:local
    command: [sh, -c, 'echo x=\${{ matrix.x }} run; echo $RANDOM > /results/out.txt']
`;

describe('cli rerun and delete: names (fake engine)', function () {
  let sb: FakeSandbox;
  beforeEach(async function () {
    sb = await FakeSandbox.create('names');
    // grid-<x> says its x and writes its result; solo ends at once; slow runs until stopped
    sb.fake.runTasks((c) => {
      if (c.labels[LABELS.component] !== 'main') return undefined;
      const x = /_grid-([ac])$/.exec(c.name)?.[1];
      if (x) return { code: 0, log: `x=${x} run\n`, files: { '/results/out.txt': `${Math.random()}\n` } };
      return c.name.endsWith('_solo') ? { code: 0 } : undefined;
    });
  });
  afterEach(async function () {
    await sb.dispose();
  });

  /** `berth A | xargs berth B...`: B with A's output words as its last arguments. */
  async function piped(a: string[], b: string[]) {
    const first = await sb.cli(...a);
    expect(first.code, first.stderr).to.equal(0);
    return sb.cli(...b, ...first.stdout.split(/\s+/).filter(Boolean));
  }

  it('rerun --all re-runs every finished attempt and leaves a running one; delete --all removes every attempt; neither takes names with it', async function () {
    await sb.write('grid.yaml', GRID);
    await sb.write('solo.yaml', sb.attempt('solo', 'true'));
    expect((await sb.cli('reconcile', '--once', '--wait')).code).to.equal(0);
    await sb.write('slow.yaml', sb.attempt('slow', 'sleep 30'));
    expect((await sb.cli('reconcile', '--once')).code).to.equal(0);
    const all = await sb.cli('rerun', '--all');
    expect(all.code, all.stderr).to.equal(0);
    expect([...all.stdout.matchAll(/^attempt\/(\S+) rerun:/gm)].map((m) => m[1])).to.deep.equal(['grid-a', 'grid-c', 'solo']);
    expect(all.stderr).to.equal('3 attempts re-run\n');
    expect([(await sb.status('grid-a'))?.run, (await sb.status('solo'))?.run, (await sb.status('slow'))?.run]).to.deep.equal([2, 2, 1]);
    const both = await sb.cli('rerun', '--all', 'solo');
    expect([both.code, both.stderr]).to.deep.equal([2, 'berth: rerun: --all takes no names and no -l\n']);
    const del = await sb.cli('delete', '--all');
    expect(del.code, del.stderr).to.equal(0);
    expect(del.stderr).to.equal('4 attempts deleted; not run again until the spec changes or berth rerun\n');
    expect(await sb.fake.containers.list([`${LABELS.instance}=${sb.instance}`])).to.deep.equal([]);
    const again = await sb.cli('delete', '--all');
    expect([again.code, again.stderr]).to.deep.equal([1, 'berth: delete --all: no attempt to delete\n']);
  });

  it('names as get -o name prints them: get -o name | xargs berth rerun; set/NAME stands for its attempts in describe, logs and rerun', async function () {
    await sb.write('grid.yaml', GRID);
    await sb.write('solo.yaml', sb.attempt('solo', 'true'));
    const first = await sb.cli('reconcile', '--once', '--wait');
    expect(first.code, first.stderr).to.equal(0);

    const rerun = await piped(['get', '-o', 'name', '-l', 'suite=names'], ['rerun']);
    expect(rerun.code, rerun.stderr).to.equal(0);
    expect(rerun.stdout).to.match(/^attempt\/grid-a rerun: run 2 (Running|Succeeded)\nattempt\/grid-c rerun: run 2 (Running|Succeeded)\n$/);
    expect(rerun.stderr).to.equal('2 attempts re-run\n');
    expect((await sb.cli('reconcile', '--once', '--wait')).code).to.equal(0);
    expect([(await sb.status('grid-a'))?.run, (await sb.status('grid-c'))?.run, (await sb.status('solo'))?.run]).to.deep.equal([2, 2, 1]);

    // describe and logs of a set: its attempts in expansion order (c before a), one after another
    const d = await sb.cli('describe', 'set/grid');
    expect(d.code, d.stderr).to.equal(0);
    expect([...d.stdout.matchAll(/^Name: +(\S+)$/gm)].map((m) => m[1])).to.deep.equal(['grid-c', 'grid-a']);
    const logs = await sb.cli('logs', 'set/grid');
    expect([logs.code, logs.stdout]).to.deep.equal([0, '==> attempt/grid-c <==\nx=c run\n\n==> attempt/grid-a <==\nx=a run\n']);
    expect((await sb.cli('logs', '-l', 'x=a')).stdout).to.equal('x=a run\n');
    const ev = await sb.cli('events', 'set/grid', '-o', 'json');
    expect(
      new Set(
        ev.stdout
          .trimEnd()
          .split('\n')
          .map((l) => (JSON.parse(l) as { attempt: string }).attempt),
      ),
    ).to.deep.equal(new Set(['grid-a', 'grid-c']));

    // rerun set/NAME: the set's attempts, nothing else
    const r = await sb.cli('rerun', 'set/grid');
    expect([r.code, r.stderr]).to.deep.equal([0, '2 attempts re-run\n']);

    // what does not exist is named, with what does; a kind berth does not know is a usage error
    const typo = await sb.cli('describe', 'set/gird');
    expect([typo.code, typo.stdout, typo.stderr]).to.deep.equal([1, '', 'berth: AttemptSet "gird" not found (did you mean set/grid?)\n']);
    const bare = await sb.cli('rerun', 'grid');
    expect([bare.code, bare.stderr]).to.deep.equal([1, 'berth: attempt "grid" not found: set/grid names the 2 attempts of AttemptSet grid\n']);
    const pod = await sb.cli('delete', 'pod/solo');
    expect([pod.code, pod.stderr]).to.deep.equal([
      2,
      'berth: "pod/solo": berth has no kind "pod": give an attempt name, attempt/NAME, or set/NAME (the attempts of an AttemptSet)\n',
    ]);
    expect((await sb.status('solo'))?.deleted).to.equal(undefined);
  });
});
