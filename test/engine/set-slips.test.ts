/**
 * A slip in an AttemptSet's file never rewrites its results (issue 54): while the file is broken
 * (a quote inside a single-quoted flow string, a tab, an unknown field, its `fromDir` or its
 * fixture briefly missing), every place a result is shown (`get`, `get -l`, `get --sets`,
 * `summary` as a table, JSON, Markdown and JUnit, `wait`, the report, `/metrics`) gives the
 * numbers it gave before the slip, and says what holds the set. The children keep their labels,
 * none is turned Invalid, no attempt is made of the set's name; runs under way when the file
 * broke end, are judged and counted under the set's last good spec. A controller runs through
 * the slips; then `reconcile --once --wait` meets a file broken before it starts.
 */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { requireEngine } from '../support/engine';
import { startController, type RunningController } from '../support/controller';
import { Sandbox } from '../support/sandbox';
import { waitFor } from '../support/wait';
import { PassThrough } from 'node:stream';
import { createLogger } from '../../src/util/log';

/** A set of 4 children (2 tasks from a folder x 2 seeds), each scoring seed % 2: 2 pass, 2 fail. */
function setSpec(extraEnv = '', sleep = 0): string {
  return [
    'apiVersion: berth.dev/v1',
    'kind: AttemptSet',
    'metadata:',
    '  name: grid',
    '  labels: {suite: demo}',
    'spec:',
    '  matrix:',
    '    task: {fromDir: ./tasks}',
    '    seed: [0, 1]',
    '  template:',
    '    image: berth/busybox:local',
    `    command: [sh, -c, 'sleep ${sleep}; echo $(( \${{ matrix.seed }} % 2 )) > /results/score.json']`,
    '    fixture: ./fixture',
    `    env: {TASK: '\${{ matrix.task }}'${extraEnv}}`,
    '  score:',
    '    file: score.json',
    '    pass: 1',
    '',
  ].join('\n');
}

/** The ways a file is broken by a slip, each made from the good text. */
const SLIPS: Record<string, (good: string) => string> = {
  // a `'` inside a single-quoted flow string, as a sed slip makes it
  'a quote slip': (g) => g.replace('% 2 ))', "% 2 '))"),
  'a tab': (g) => g.replace('\n  matrix:', '\n\tmatrix:'),
  'an unknown field': (g) => g.replace('\n  matrix:', '\n  matrixx: 1\n  matrix:'),
};

function get(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, (res) => {
        let body = '';
        res.on('data', (c) => (body += String(c)));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      })
      .on('error', reject);
  });
}

interface Views {
  get: string[];
  selected: string[];
  sets: unknown;
  summary: unknown;
  summaryText: string[];
  markdown: string[];
  junit: string[];
  wait: string;
  report: unknown;
  metrics: string[];
}

/** Every place a result is shown, reduced to its numbers (no ages, durations or times). */
async function views(sb: Sandbox, metricsUrl?: string): Promise<{ views: Views; held: string[] }> {
  const held: string[] = [];
  const g = await sb.cli('get');
  expect(g.code, g.stderr).to.equal(0);
  held.push(g.stderr);
  // NAME, PHASE and RESULT (found by the header: other columns, as CELL, may follow it)
  const rowsOf = (out: string) => {
    const [head = '', ...lines] = out.trim().split('\n');
    const at = head.split(/ {3,}/).indexOf('RESULT');
    return lines.map((l) => {
      const c = l.split(/ {3,}/);
      return `${c[0]} ${c[1]} ${c[at]}`;
    });
  };
  const sel = await sb.cli('get', '-l', 'suite=demo,task=t1', '-o', 'name');
  const sets = await sb.cli('get', '--sets', '-o', 'json');
  held.push(sets.stderr);
  const setItems = (JSON.parse(sets.stdout) as { items: { metadata: { name: string }; status: Record<string, unknown> }[] }).items;
  const sum = await sb.cli('summary', '-o', 'json');
  const summary = JSON.parse(sum.stdout) as { sets: Record<string, unknown>[] };
  held.push(JSON.stringify(summary.sets.map((s) => s.heldBy ?? null)));
  const text = await sb.cli('summary');
  held.push(text.stdout);
  const md = await sb.cli('summary', '-o', 'markdown');
  held.push(md.stdout);
  const junit = await sb.cli('summary', '-o', 'junit');
  held.push(junit.stdout);
  const w = await sb.cli('wait', 'set/grid', '--timeout', '5s');
  held.push(w.stderr);
  const file = path.join(sb.dir, 'report.html');
  const r = await sb.cli('report', '-o', file);
  expect(r.code, r.stderr).to.equal(0);
  const html = await fs.readFile(file, 'utf8');
  held.push(html);
  const data = JSON.parse(/<script type="application\/json" id="report-data">([\s\S]*?)<\/script>/.exec(html)?.[1] as string) as {
    summary: { attempts: number; byPhase: unknown; byOutcome: unknown };
    sets: Record<string, unknown>[];
    attempts: { name: string; phase: string; outcome: string }[];
  };
  const metrics = metricsUrl ? (await get(`${metricsUrl}/metrics`)).body.split('\n').filter((l) => l.startsWith('berth_attempts{')) : [];
  return {
    held,
    views: {
      get: rowsOf(g.stdout),
      selected: sel.stdout.trim().split('\n'),
      sets: setItems.map((i) => {
        const { heldBy: _h, ...status } = i.status;
        return { name: i.metadata.name, ...status };
      }),
      summary: summary.sets.map((s) => ({
        name: s.name,
        counts: [s.n, s.passed, s.failed, s.infra, s.skipped, s.unfinished, s.passRate],
        children: (s.children as { name: string; outcome: string; score: number | null; phase: string }[]).map((c) => [c.name, c.outcome, c.score, c.phase]),
        cells: s.cells,
      })),
      summaryText: text.stdout.split('\n').filter((l) => /^SET |^ {2}(pass rate|AXIS|task|seed) /.test(l)),
      markdown: md.stdout.split('\n').filter((l) => l.startsWith('| ')),
      junit: junit.stdout
        .split('\n')
        .filter((l) => /<testsuite |<testcase |<failure |<error /.test(l))
        .map((l) => l.replace(/ (time|timestamp)="[^"]*"/g, '')),
      wait: `${w.code} ${w.stdout.trim().split('\n').pop() ?? ''}`,
      report: {
        attempts: data.summary.attempts,
        byPhase: data.summary.byPhase,
        byOutcome: data.summary.byOutcome,
        sets: data.sets.map(({ held: _h, ...s }) => s),
        rows: data.attempts.map((a) => [a.name, a.phase, a.outcome]),
      },
      metrics,
    },
  };
}

describe('a slip in an AttemptSet file never rewrites its results (real engine)', function () {
  this.timeout(240_000);
  before(requireEngine);

  let sb: Sandbox;
  let good: string;
  let baseline: Views;
  const records = () => path.join(sb.stateDir, sb.instance, 'attempts');
  const allScored = async () => {
    const all = await Promise.all(['grid-0-t1', 'grid-0-t2', 'grid-1-t1', 'grid-1-t2'].map((n) => sb.status(n)));
    return all.every((s) => s?.phase === 'Succeeded' && typeof s.score === 'number');
  };

  beforeEach(async function () {
    sb = await Sandbox.create('setslip');
    await sb.write('tasks/t1/task.txt', 'one\n');
    await sb.write('tasks/t2/task.txt', 'two\n');
    await sb.write('fixture/input.txt', 'in\n');
    good = setSpec();
    await sb.write('grid.yaml', good);
  });
  afterEach(async function () {
    await sb.destroy();
  });

  it('while a controller runs: each slip shows the numbers from before it, with the error beside them; runs under way end under the last good spec', async function () {
    let ctl: RunningController | undefined;
    try {
      let log = '';
      const stream = new PassThrough();
      stream.on('data', (c) => (log += String(c)));
      ctl = startController(sb, { metricsAddr: '127.0.0.1:0', resync: 1, maxRunning: 8 }, undefined, createLogger({ level: 'info', stream }));
      await waitFor('the four children scored', allScored, { dirs: [records()], timeoutMs: 60_000 });
      const metricsUrl = await waitFor('the metrics address', async () => /health on (http:\/\/\S+) /.exec(log)?.[1], { timeoutMs: 10_000 });
      const readyz = async () => (await get(`${metricsUrl}/readyz`)).body;
      baseline = (await views(sb, metricsUrl)).views;
      expect(baseline.get).to.deep.equal([
        'grid-0-t1 Succeeded failed (score 0)',
        'grid-0-t2 Succeeded failed (score 0)',
        'grid-1-t1 Succeeded passed (score 1)',
        'grid-1-t2 Succeeded passed (score 1)',
      ]);
      expect(baseline.wait).to.equal('3 2 passed, 2 failed, 0 infrastructure');

      const slip = async (what: string, make: () => Promise<void>, mend: () => Promise<void>) => {
        await make();
        await waitFor(`the controller sees ${what}`, async () => /spec errors in 1 file/.test(await readyz()), { dirs: [records()], timeoutMs: 20_000 });
        // a resync later, the controller has planned every child under the broken file
        const passes = async () =>
          Number(/^controller_runtime_reconcile_total\{[^}]*result="success"[^}]*\} (\d+)/m.exec((await get(`${metricsUrl}/metrics`)).body)?.[1] ?? 0);
        const now = await passes();
        await waitFor('a resync', async () => (await passes()) >= now + 1, { dirs: [], timeoutMs: 20_000 });
        const seen = await views(sb, metricsUrl);
        expect(seen.views, what).to.deep.equal(baseline);
        // the error is shown beside the numbers, everywhere
        const [getNote, setsNote, heldJson, text, md, junit, waitNote, html] = seen.held;
        expect(getNote, what).to.match(/4 attempts keep their last good spec: their specs are broken; what runs goes on under it/);
        expect(setsNote, what)
          .to.match(/1 AttemptSet keeps its last good spec: its file is broken/)
          .and.to.match(/\n {2}grid: \S*grid\.yaml:\d+:\d+: /);
        expect(heldJson, what).to.match(/grid\.yaml/);
        expect(text, what).to.match(/^ {2}held at its last good spec: its file is broken \(\S*grid\.yaml:\d+:\d+: /m);
        expect(md, what).to.match(/^> set\/grid is held at its last good spec/m);
        expect(junit, what).to.match(/<property name="berth\.heldBy" value="\S*grid\.yaml:\d+:\d+: /);
        expect(waitNote, what).to.match(/keep their last good spec/);
        expect(html, what).to.match(/held at its last good spec: its file is broken/);
        // no child turned Invalid, no attempt named after the set
        const recs = await sb.store().loadAll();
        sb.store().invalidate();
        expect([...recs.keys()].sort(), what).to.deep.equal(['grid-0-t1', 'grid-0-t2', 'grid-1-t1', 'grid-1-t2']);
        expect(
          [...recs.values()].map((r) => r.phase),
          what,
        ).to.deep.equal(['Succeeded', 'Succeeded', 'Succeeded', 'Succeeded']);
        await mend();
        await waitFor(`the controller sees ${what} mended`, async () => (await readyz()) === 'ok\n', { dirs: [records()], timeoutMs: 20_000 });
        expect((await views(sb, metricsUrl)).views, `${what}, mended`).to.deep.equal(baseline);
      };
      for (const [what, make] of Object.entries(SLIPS)) {
        await slip(
          what,
          () => sb.write('grid.yaml', make(good)).then(() => undefined),
          () => sb.write('grid.yaml', good).then(() => undefined),
        );
      }
      await slip(
        'its fromDir missing',
        () => fs.rename(path.join(sb.specsDir, 'tasks'), path.join(sb.dir, 'tasks-away')),
        () => fs.rename(path.join(sb.dir, 'tasks-away'), path.join(sb.specsDir, 'tasks')),
      );

      // A new spec (an env value more: every child replaced), slow; the file breaks while they run.
      const v2 = setSpec(', V: "2"', 3);
      await sb.write('grid.yaml', v2);
      await waitFor(
        'the new runs under way',
        async () =>
          (
            await sb
              .store()
              .loadAll()
              .finally(() => sb.store().invalidate())
          ).size === 4 &&
          (await Promise.all(['grid-0-t1', 'grid-0-t2', 'grid-1-t1', 'grid-1-t2'].map((n) => sb.status(n)))).every(
            (s) => s?.run === 2 && s.phase === 'Running',
          ),
        {
          dirs: [records()],
          timeoutMs: 60_000,
        },
      );
      await sb.write('grid.yaml', SLIPS['a quote slip']?.(v2) ?? '');
      await waitFor('the runs ended and scored under the broken file', async () => (await allScored()) && (await sb.status('grid-0-t1'))?.run === 2, {
        dirs: [records()],
        timeoutMs: 60_000,
      });
      const after = await views(sb, metricsUrl);
      expect(after.views.get).to.deep.equal(baseline.get);
      expect(after.views.sets).to.deep.equal(baseline.sets);
      expect(after.views.wait).to.equal(baseline.wait);
      expect(after.views.junit).to.deep.equal(baseline.junit);
      expect(after.views.metrics).to.deep.equal(baseline.metrics);
      // nothing started meanwhile: each child has exactly run 2, harvested
      for (const n of ['grid-0-t1', 'grid-0-t2', 'grid-1-t1', 'grid-1-t2']) expect((await sb.status(n))?.history.length, n).to.equal(1);
    } finally {
      if (ctl) expect(await ctl.stop(), ctl.io.stderr).to.equal(0);
    }
  });

  it('reconcile --once --wait: a file broken before it starts, or while it runs, changes no number', async function () {
    const r = await sb.cli('reconcile', '--once', '--wait', '--max-running', '8');
    expect(r.code, r.stderr).to.equal(3);
    expect(r.stdout).to.match(/^2 passed, 2 failed, 0 infrastructure$/m);
    baseline = (await views(sb)).views;
    // the fixture briefly missing: every child's spec is in error, the set itself loads
    await fs.rename(path.join(sb.specsDir, 'fixture'), path.join(sb.dir, 'fixture-away'));
    const held = await sb.cli('reconcile', '--once', '--wait', '--max-running', '8');
    // the spec errors are berth's own (exit 2), the numbers are those of the last good spec
    expect(held.code, held.stderr).to.equal(2);
    expect(held.stdout).to.match(/^2 passed, 2 failed, 0 infrastructure$/m);
    expect((await views(sb)).views).to.deep.equal(baseline);
    await fs.rename(path.join(sb.dir, 'fixture-away'), path.join(sb.specsDir, 'fixture'));
    // each slip of the file, and its fromDir missing, met by --once --wait before it starts: exit 2, the same numbers everywhere
    const good = await fs.readFile(path.join(sb.specsDir, 'grid.yaml'), 'utf8');
    const onceOver = async (what: string, slip: () => Promise<unknown>, mend: () => Promise<unknown>) => {
      await slip();
      const r2 = await sb.cli('reconcile', '--once', '--wait', '--max-running', '8');
      expect(r2.code, `${what}: ${r2.stderr}`).to.equal(2);
      expect(r2.stdout, what).to.match(/^2 passed, 2 failed, 0 infrastructure$/m);
      expect((await views(sb)).views, what).to.deep.equal(baseline);
      await mend();
    };
    for (const [what, make] of Object.entries(SLIPS)) {
      await onceOver(
        what,
        () => sb.write('grid.yaml', make(good)),
        () => sb.write('grid.yaml', good),
      );
    }
    await onceOver(
      'its fromDir missing',
      () => fs.rename(path.join(sb.specsDir, 'tasks'), path.join(sb.dir, 'tasks-away')),
      () => fs.rename(path.join(sb.dir, 'tasks-away'), path.join(sb.specsDir, 'tasks')),
    );
    expect((await sb.status('grid-0-t1'))?.run, 'no new run while the file was broken').to.equal(1);

    // a new spec, slow; the file breaks while --once --wait runs (it reads the specs once)
    const v2 = setSpec(', V: "2"', 2);
    await sb.write('grid.yaml', v2);
    const running = sb.cli('reconcile', '--once', '--wait', '--max-running', '8');
    await waitFor('the runs under way', async () => (await sb.status('grid-1-t2'))?.run === 2, { dirs: [records()], timeoutMs: 60_000 });
    await sb.write('grid.yaml', SLIPS['a tab']?.(v2) ?? '');
    const ended = await running;
    expect(ended.code, ended.stderr).to.equal(3);
    expect(ended.stdout).to.match(/^2 passed, 2 failed, 0 infrastructure$/m);
    const seen = (await views(sb)).views;
    expect(seen.get).to.deep.equal(baseline.get);
    expect(seen.wait).to.equal(baseline.wait);
    expect(seen.summary).to.deep.equal(baseline.summary);
    // and another pass over the broken file starts nothing and counts the same
    const again = await sb.cli('reconcile', '--once', '--wait', '--max-running', '8');
    expect(again.code, again.stderr).to.equal(2);
    expect(again.stdout).to.match(/^2 passed, 2 failed, 0 infrastructure$/m);
    expect((await sb.status('grid-0-t1'))?.run).to.equal(2);
  });
});
