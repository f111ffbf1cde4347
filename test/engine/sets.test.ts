/**
 * AttemptSets on the real engine: a 2 models x 2 tasks x 2 seeds set runs with
 * `reconcile --once --wait`, each child's process reading its fixture and writing its score;
 * failFast, maxFailed, pass rates, an invalid set, the controller's maxParallel. How the matrix
 * grows and changes is on the fake engine (test/unit/sets/matrix-growth.test.ts).
 */
import { expect } from 'chai';
import { SET_LABEL } from '../../src/constants';
import type { Summary } from '../../src/sets/summary';
import type { AttemptStatus } from '../../src/status/types';
import { startController } from '../support/controller';
import { requireEngine } from '../support/engine';
import { Sandbox } from '../support/sandbox';
import { waitFor } from '../support/wait';

// m1 always scores 1; m2 scores 1 only with seed 0. The task's fixture is in the working dir.
const SET = (seeds: number) => `apiVersion: berth.dev/v1
kind: AttemptSet
metadata:
  name: evals
  labels: {suite: sets-test}
spec:
  matrix:
    model: [m1, m2]
    task: {fromDir: ./tasks}
    seed: {range: [0, ${seeds}]}
  maxParallel: 4
  template:
    image: berth/busybox:local
    command: [sh, -c, 'cat task.txt >/dev/null && if [ \${{ matrix.model }} = m1 ] || [ \${{ matrix.seed }} = 0 ]; then echo 1; else echo 0; fi > /results/score.json']
    fixture: ./tasks/\${{ matrix.task }}
  score: {file: score.json, pass: 1}
`;

describe('AttemptSets (real engine)', function () {
  this.timeout(180_000);
  before(requireEngine);

  let sb: Sandbox;
  beforeEach(async function () {
    sb = await Sandbox.create('sets');
  });
  afterEach(async function () {
    await sb.destroy();
  });

  async function all(): Promise<Map<string, AttemptStatus>> {
    return sb.store().loadAll();
  }

  it("runs the matrix: each child's process reads its fixture and writes its score, harvested; summary reads them", async function () {
    // How the matrix grows and changes (new cells, replaced children, the no-op pass): on the
    // fake engine, test/unit/sets/matrix-growth.test.ts. Here what only a real run shows.
    await sb.write('tasks/t1/task.txt', 'one');
    await sb.write('tasks/t2/task.txt', 'two');
    await sb.write('evals.yaml', SET(2));

    const first = await sb.cli('reconcile', '--once', '--wait', '--max-running', '8');
    // m2 scores 0 with seed 1: a task failure (3)
    expect(first.code, first.stderr).to.equal(3);
    expect(first.stdout.split('\n').at(-2)).to.equal('6 passed, 2 failed, 0 infrastructure');
    const before = await all();
    expect([...before.keys()].sort()).to.deep.equal([
      'evals-m1-0-t1',
      'evals-m1-0-t2',
      'evals-m1-1-t1',
      'evals-m1-1-t2',
      'evals-m2-0-t1',
      'evals-m2-0-t2',
      'evals-m2-1-t1',
      'evals-m2-1-t2',
    ]);
    for (const s of before.values()) {
      expect(s.phase, s.name).to.equal('Succeeded');
      expect(s.score, s.name).to.equal(s.name.startsWith('evals-m1') || s.name.includes('-0-') ? 1 : 0);
    }
    const m1 = await sb.cli('get', '-l', 'model=m1', '-l', `${SET_LABEL}=evals`, '-o', 'json');
    expect((JSON.parse(m1.stdout) as { items: { name: string }[] }).items.map((i) => i.name)).to.have.length(4);

    // m1 passes every seed; m2 only seed 0: per (model, task) cell n=2, c=1 → pass@1 1/2, pass@2 1.
    const out = await sb.cli('summary', '-o', 'json');
    expect(out.code, out.stderr).to.equal(0);
    const set = (JSON.parse(out.stdout) as Summary).sets[0];
    expect(set).to.include({ name: 'evals', n: 8, passed: 6, failed: 2, infra: 0, samplesAxis: 'seed' });
    const model = (v: string) => set?.byAxis.model?.find((x) => x.value === v);
    expect(model('m1')?.passAtK).to.deep.equal({ '1': 1, '2': 1 });
    expect(model('m2')?.passAtK).to.deep.equal({ '1': 0.5, '2': 1 });
  });

  it('failFast stops admitting after a task failure (the rest end Failed/FailFast, never created); a missing score is infra, not 0', async function () {
    await sb.write(
      'ff.yaml',
      `apiVersion: berth.dev/v1
kind: AttemptSet
metadata: {name: ff}
spec:
  matrix: {x: [a, b, c]}
  maxParallel: 1
  failFast: true
  template:
    image: berth/busybox:local
    command: [sh, -c, 'test \${{ matrix.x }} != a']
---
apiVersion: berth.dev/v1
kind: AttemptSet
metadata: {name: sc}
spec:
  matrix: {x: [p, q]}
  template:
    image: berth/busybox:local
    command: [sh, -c, 'if [ \${{ matrix.x }} = p ]; then echo "{\\"score\\": 2}" > /results/score.json; fi']
  score: {file: score.json}
`,
    );
    const r = await sb.cli('reconcile', '--once', '--wait', '--max-running', '4');
    // a task failure (3) and a missing score (an infrastructure outcome: 5 wins)
    expect(r.code, r.stderr).to.equal(5);
    expect(r.stdout).to.match(/\n1 passed, 1 failed, 1 infrastructure \(1 ScoreMissing: sc-q\), 2 skipped\n$/);
    const st = await all();
    expect([st.get('ff-a')?.phase, st.get('ff-a')?.reason]).to.deep.equal(['Failed', 'Error']);
    for (const n of ['ff-b', 'ff-c']) {
      expect(st.get(n), n).to.deep.include({ phase: 'Failed', reason: 'FailFast', message: 'not started: set ff has failFast and ff-a failed' });
      expect(st.get(n)?.startedAt, n).to.equal(undefined);
      expect(st.get(n)?.containerId, n).to.equal(undefined);
    }
    expect(st.get('sc-p')).to.deep.include({ phase: 'Succeeded', score: 2 });
    expect(st.get('sc-q')).to.deep.include({ phase: 'Succeeded', scoreError: 'score.json: not found' });
    expect(st.get('sc-q')).to.not.have.property('score');

    const described = await sb.cli('describe', 'sc-q');
    expect(described.stdout)
      .to.match(/AttemptSet: +sc \(x=q\)/)
      .and.match(/Score: +none: score.json: not found/);
    const out = JSON.parse((await sb.cli('summary', '-o', 'json')).stdout) as Summary;
    expect(out.sets.map((x) => [x.name, x.passed, x.failed, x.infra, x.skipped, x.infraReasons])).to.deep.equal([
      ['ff', 0, 1, 0, 2, {}],
      ['sc', 1, 0, 1, 0, { ScoreMissing: 1 }],
    ]);
    // Nothing more to do: the skipped children stay as they are.
    const again = await sb.cli('plan', '--detailed-exitcode');
    expect(again.code, again.stdout).to.equal(0);
  });

  it('maxFailed stops admitting after that many infrastructure outcomes (the rest end Failed/MaxFailedReached, never created)', async function () {
    // one at a time; each child exits 0 without its score file: a missing score, an infrastructure outcome
    await sb.write(
      'mf.yaml',
      `apiVersion: berth.dev/v1
kind: AttemptSet
metadata: {name: mf}
spec:
  matrix: {x: [a, b, c]}
  maxParallel: 1
  maxFailed: 1
  template:
    image: berth/busybox:local
    command: [sh, -c, 'echo \${{ matrix.x }}']
  score: {file: score.json}
`,
    );
    const r = await sb.cli('reconcile', '--once', '--wait');
    expect(r.code, r.stderr).to.equal(5);
    expect(r.stdout).to.match(/\n0 passed, 0 failed, 1 infrastructure \(1 ScoreMissing: mf-a\), 2 skipped\n$/);
    const st = await all();
    expect(st.get('mf-a')).to.deep.include({ phase: 'Succeeded', scoreError: 'score.json: not found' });
    for (const n of ['mf-b', 'mf-c']) {
      expect(st.get(n), n).to.deep.include({
        phase: 'Failed',
        reason: 'MaxFailedReached',
        message: 'not started: set mf reached maxFailed 1 (infrastructure failures: mf-a (ScoreMissing))',
      });
      expect([st.get(n)?.startedAt, st.get(n)?.containerId], n).to.deep.equal([undefined, undefined]);
    }
    const out = JSON.parse((await sb.cli('summary', '-o', 'json')).stdout) as Summary;
    expect(out.sets.map((x) => [x.name, x.passed, x.failed, x.infra, x.skipped])).to.deep.equal([['mf', 0, 0, 1, 2]]);
  });

  it('pass rates that do not flatter: a timeout fails, a {"pass": 1} or true passes; exit 3, 5 once an attempt is Blocked, --fail-on chooses', async function () {
    const rates = (score: string) => `apiVersion: berth.dev/v1
kind: AttemptSet
metadata: {name: rates}
spec:
  matrix: {x: [fails, hangs, passes, says]}
  template:
    image: berth/busybox:local
    command:
      - sh
      - -c
      - |
        case \${{ matrix.x }} in
          fails) exit 1;;
          hangs) trap 'exit 143' TERM; sleep 300 & wait;;
          passes) echo '{"pass": 1}' > /results/score.json;;
          says) echo true > /results/score.json;;
        esac
    deadlineSeconds: 3
  score: ${score}
`;
    // pass: 5 — a verdict passes whatever the threshold says
    await sb.write('rates.yaml', rates('{file: score.json, pass: 5}'));
    const r = await sb.cli('reconcile', '--once', '--wait', '--max-running', '4');
    expect(r.code, r.stderr + r.stdout).to.equal(3);
    expect(r.stdout.split('\n').at(-2)).to.equal('2 passed, 2 failed, 0 infrastructure');
    const st = await all();
    expect([st.get('rates-hangs')?.phase, st.get('rates-fails')?.reason]).to.deep.equal(['TimedOut', 'Error']);
    expect(st.get('rates-passes')).to.deep.include({ phase: 'Succeeded', score: 1, scorePass: true });
    expect(st.get('rates-says')).to.deep.include({ phase: 'Succeeded', score: 1, scorePass: true });
    const summary = JSON.parse((await sb.cli('summary', '-o', 'json')).stdout) as Summary;
    expect(summary.sets[0]).to.deep.include({ passed: 2, failed: 2, infra: 0, passRate: 0.5, infraReasons: {} });
    expect((await sb.cli('summary', '-o', 'junit')).stdout).to.match(/<testsuite name="rates" tests="4" failures="2" errors="0"/);

    // an eval run: task failures are the model's, not the fleet's
    const evalRun = await sb.cli('reconcile', '--once', '--wait', '--fail-on', 'infra');
    expect([evalRun.code, evalRun.stdout.split('\n').at(-2)]).to.deep.equal([0, '2 passed, 2 failed, 0 infrastructure']);
    const w = await sb.cli('wait', '--timeout', '20s');
    expect([w.code, w.stdout.split('\n').at(-2)]).to.deep.equal([3, '2 passed, 2 failed, 0 infrastructure']);

    // an attempt that cannot run without the user (a secret missing): not waited for, an infrastructure outcome, 5 wins
    await sb.write(
      'blk.yaml',
      sb.attempt('blk', 'true', `  secrets:\n    - {name: key, fromEnv: BERTH_TEST_UNSET_${sb.instance.replace(/\W/g, '_').toUpperCase()}}\n`),
    );
    const blocked = await sb.cli('reconcile', '--once', '--wait');
    expect(blocked.code, blocked.stderr).to.equal(5);
    expect(blocked.stdout.split('\n').at(-2)).to.equal('2 passed, 2 failed, 1 infrastructure (1 SecretMissing: blk)');
    expect((await sb.cli('reconcile', '--once', '--wait', '--fail-on', 'infra')).code).to.equal(5);
    expect((await sb.cli('reconcile', '--once', '--wait', '--fail-on', 'none')).code).to.equal(0);
    const wb = await sb.cli('wait', '--timeout', '20s');
    expect([wb.code, wb.stdout.split('\n').at(-2)]).to.deep.equal([5, '2 passed, 2 failed, 1 infrastructure (1 SecretMissing: blk)']);
    await sb.remove('blk.yaml');

    // the set counts its timeouts as infrastructure: no child runs again (score is outside the hash), the numbers move
    await sb.write('rates.yaml', rates('{file: score.json, pass: 5, infra: [TimedOut]}'));
    const moved = await sb.cli('reconcile', '--once', '--wait');
    expect(moved.code, moved.stderr).to.equal(5);
    expect(moved.stdout.split('\n').at(-2)).to.equal('2 passed, 1 failed, 1 infrastructure (1 TimedOut: rates-hangs)');
    const after = await all();
    for (const n of ['rates-fails', 'rates-hangs', 'rates-passes', 'rates-says']) expect(after.get(n)?.run, n).to.equal(1);
    const again = JSON.parse((await sb.cli('summary', '-o', 'json')).stdout) as Summary;
    expect(again.sets[0]).to.deep.include({ passed: 2, failed: 1, infra: 1, infraReasons: { TimedOut: 1 } });
    expect(again.sets[0]?.passRate).to.be.closeTo(2 / 3, 1e-9);
  });

  it("an invalid set leaves what runs under its children alone, and describe shows the set's error", async function () {
    const set = (template: string, matrix = '{x: [a, b]}') => `apiVersion: berth.dev/v1
kind: AttemptSet
metadata: {name: inv}
spec:
  matrix: ${matrix}
  template:
    image: berth/busybox:local
    command: [sh, -c, '${template}']
`;
    await sb.write('inv.yaml', set('sleep 300 # ${{ matrix.x }}'));
    const first = await sb.cli('reconcile', '--once');
    expect(first.code, first.stderr).to.equal(0);
    const running = await all();
    expect([...running.values()].map((s) => [s.name, s.phase])).to.deep.equal([
      ['inv-a', 'Running'],
      ['inv-b', 'Running'],
    ]);

    // A ${{ }} naming no axis: the set is invalid; its children keep running, untouched.
    await sb.write('inv.yaml', set('sleep 300 # ${{ matrix.y }}'));
    const bad = await sb.cli('reconcile', '--once');
    expect(bad.code).to.equal(2);
    expect(bad.stderr).to.match(/inv\.yaml:8:\d+: spec\.template\.command\[2\]: \$\{\{ matrix\.y \}\} names no axis/);
    const d = await sb.cli('describe', 'inv-a');
    // its children keep the set's last good spec (spec/last-good.ts), held by the set's error
    expect(d.stdout)
      .to.match(/HELD at its last good spec/)
      .and.match(/matrix\.y \}\} names no axis/);
    // A matrix that cannot be expanded (fromDir outside the specs folder): still untouched.
    await sb.write('inv.yaml', set('sleep 300 # ${{ matrix.x }}', '{x: {fromDir: ../..}}'));
    const worse = await sb.cli('reconcile', '--once');
    expect(worse.code).to.equal(2);
    const after = await all();
    for (const [name, s] of running) expect(after.get(name), name).to.deep.include({ phase: 'Running', containerId: s.containerId, run: 1 });
    const listed = await sb.engine.containers.list([`dev.berth.instance=${sb.instance}`]);
    expect(
      listed
        .filter((c) => c.state === 'running')
        .map((c) => c.id)
        .sort(),
    ).to.deep.equal([...running.values()].map((s) => s.containerId).sort());
  });

  it('the controller runs a set within its maxParallel and starts a new cell when the matrix grows', async function () {
    const set = (values: string) => `apiVersion: berth.dev/v1
kind: AttemptSet
metadata: {name: ctl}
spec:
  matrix: {x: [${values}]}
  maxParallel: 2
  template:
    image: berth/busybox:local
    command: [sh, -c, 'sleep 1']
`;
    const ctl = startController(sb, { maxRunning: 8 });
    const running = async () => (await sb.engine.containers.list([`dev.berth.instance=${sb.instance}`])).filter((c) => c.state === 'running').length;
    let most = 0;
    try {
      await sb.write('ctl.yaml', set('a, b, c, d'));
      const finished = (names: string[]) => async () => {
        most = Math.max(most, await running());
        const st = await all();
        return names.every((n) => st.get(n)?.phase === 'Succeeded');
      };
      await waitFor('the 4 children succeeded', finished(['ctl-a', 'ctl-b', 'ctl-c', 'ctl-d']), { instance: sb.instance, timeoutMs: 60_000 });
      expect(most, 'running at once').to.be.at.most(2);
      const before = await all();
      await sb.write('ctl.yaml', set('a, b, c, d, e'));
      await waitFor('the new child succeeded', finished(['ctl-e']), { instance: sb.instance, timeoutMs: 30_000 });
      const after = await all();
      for (const n of ['ctl-a', 'ctl-b', 'ctl-c', 'ctl-d']) expect(after.get(n)?.updatedAt, n).to.equal(before.get(n)?.updatedAt);
    } finally {
      expect(await ctl.stop()).to.equal(0);
    }
  });

  it('child names are readable for any axis value (DNS-1123 labels, distinct), and get and the Markdown summary show each cell', async function () {
    await sb.write(
      'swe.yaml',
      `apiVersion: berth.dev/v1
kind: AttemptSet
metadata: {name: swe}
spec:
  matrix:
    task: [django__django-11099, Flask.1]
    model: [openai/gpt-4o]
  template:
    image: berth/busybox:local
    command: [sh, -c, 'test "\${{ matrix.task }}" = Flask.1']
`,
    );
    const r = await sb.cli('reconcile', '--once', '--wait');
    expect(r.code, r.stderr).to.equal(3);
    const names = [...(await all()).keys()].sort();
    expect(names).to.have.length(2);
    expect(names[0]).to.match(/^swe-openai-gpt-4o-django-django-11099-[0-9a-f]{10}$/);
    expect(names[1]).to.match(/^swe-openai-gpt-4o-flask-1-[0-9a-f]{10}$/);
    for (const n of names) expect(n).to.match(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/);
    const get = (await sb.cli('get')).stdout.split('\n');
    expect(get[0]).to.match(/ CELL$/);
    expect(get.find((l) => l.startsWith(names[0] as string))).to.match(/ task=django__django-11099,model=openai\/gpt-4o$/);
    const md = (await sb.cli('summary', '-o', 'markdown')).stdout;
    expect(md).to.contain(`| ${names[0] as string} | set/swe | task=django\\_\\_django-11099, model=openai/gpt-4o | failed |`);
  });
});
