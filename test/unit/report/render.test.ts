/**
 * The fleet report, pure: its data from records (outcomes, times, links, bounds), its page
 * against a golden file (UPDATE_GOLDEN=1 rewrites it), and escaping: attempt-controlled strings
 * never reach the page as markup. The browser half is test/engine/report-browser.test.ts.
 */
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { REPORT_LIMITS } from '../../../src/constants';
import { scriptJson } from '../../../src/report/escape';
import { buildReport, clip, linksOf, plainOutcome, runFiles, type ReportData } from '../../../src/report/model';
import { embedded, renderReport } from '../../../src/report/render';
import { concurrency } from '../../../src/report/timeline';
import { summarize } from '../../../src/sets/summary';
import { gradeHash } from '../../../src/spec/grade-hash';
import type { GradeRecord } from '../../../src/status/types';
import { spec, status } from '../../support/builders';
import { fleet, PRESENT, ROOT, T0, XSS } from './fixture';

const GOLDEN = path.join(__dirname, 'render.golden.html');
const NOW = T0 + 30_000;

function data(linkBase: string | null = ROOT): ReportData {
  const f = fleet();
  const s = summarize(f.sets, f.statuses, NOW);
  const childLabels = new Map(f.sets.get('swe')?.children.flatMap((c) => (c.loaded ? [[c.name, c.loaded.spec.labels] as const] : [])));
  return buildReport({
    sets: s.sets,
    childLabels,
    plain: f.plain,
    statuses: f.statuses,
    now: NOW,
    instance: 'default',
    maxRunning: 3,
    resultsRoot: ROOT,
    linkBase,
    mode: 'file',
    present: PRESENT,
  });
}

/** The page without its embedded data and script: the markup the renderer wrote from the data. */
const markup = (html: string) => html.replace(/<script[\s\S]*?<\/script>/g, '');

describe('report/model', () => {
  it('classifies every attempt: set children as the summary does, plain attempts by phase, a missing record unfinished', () => {
    const d = data();
    const by = new Map(d.attempts.map((a) => [a.name, a]));
    expect(d.attempts.map((a) => a.name)).to.deep.equal([
      'swe-0',
      'swe-1',
      'swe-2',
      'swe-3',
      'swe-4',
      'swe-5',
      'swe-6',
      'swe-bad',
      'plain-new',
      'plain-ok',
      'plain-outside',
    ]);
    expect([...by.values()].map((a) => a.outcome)).to.deep.equal([
      'passed',
      'failed',
      'passed',
      'failed', // TimedOut: the task's own failure
      'failed',
      'unfinished',
      'passed',
      'infra',
      'unfinished',
      'passed',
      'failed', // OOMKilled: the task's own failure
    ]);
    expect(by.get('plain-new')?.reason).to.equal('NotReconciled');
    expect(d.summary.byOutcome).to.deep.equal({ passed: 4, failed: 4, infra: 1, skipped: 0, unfinished: 2 });
    expect(d.summary.passRate).to.equal(4 / 8);
    expect(plainOutcome(status('x', { phase: 'Failed', reason: 'Error' }))).to.equal('failed');
    expect(plainOutcome(status('x', { phase: 'TimedOut', reason: 'DeadlineExceeded' }))).to.equal('failed');
    expect(plainOutcome(status('x', { phase: 'Failed', reason: 'Lost' }))).to.equal('infra');
    expect(plainOutcome(status('x', { phase: 'Blocked', reason: 'SecretMissing' }))).to.equal('infra');
  });

  it('times: waiting from creation (or the last run end), provisioning, engine start and finish; wall time and slots held', () => {
    const d = data();
    const a = d.attempts[2];
    expect(a).to.include({ queuedAt: T0, provisionedAt: T0 + 4000, startedAt: T0 + 5000, finishedAt: T0 + 11_000, durationMs: 6000 });
    const retried = buildReport({
      sets: [],
      childLabels: new Map(),
      plain: [{ name: 'r', labels: {} }],
      statuses: new Map([
        [
          'r',
          status('r', {
            createdAt: new Date(T0).toISOString(),
            run: 2,
            history: [{ run: 1, specHash: 'h', phase: 'Failed', finishedAt: new Date(T0 + 7000).toISOString() }],
          }),
        ],
      ]),
      now: NOW,
      instance: 'i',
      maxRunning: null,
      resultsRoot: ROOT,
      linkBase: null,
      mode: 'live',
    });
    expect(retried.attempts[0]?.queuedAt).to.equal(T0 + 7000);
    // First wait (T0) to the running swe-5 (now).
    expect(d.summary.wallMs).to.equal(NOW - T0);
    // swe-1, swe-2, plain-ok and plain-outside at 5 s (over --max-running 3: the line shows it).
    expect(d.summary.peakRunning).to.equal(4);
    expect(
      concurrency(
        [
          { provisionedAt: 0, startedAt: 1, finishedAt: 5, outcome: 'passed' },
          { provisionedAt: 2, startedAt: 3, finishedAt: null, outcome: 'unfinished' },
          { provisionedAt: 4, startedAt: null, finishedAt: null, outcome: 'infra' },
        ],
        9,
      ),
    ).to.deep.equal([
      { t: 0, running: 1 },
      { t: 2, running: 2 },
      { t: 5, running: 1 },
      { t: 9, running: 0 },
    ]);
  });

  it('links: relative to the report folder, only into the results root, none on the live page', () => {
    expect(linksOf('/r/a b/run-2/results', '/r', '/r')).to.deep.equal({
      results: 'a%20b/run-2/results/',
      logs: 'a%20b/run-2/logs.txt',
      manifest: 'a%20b/run-2/manifest.json',
    });
    expect(linksOf('/r/a/run-1/results', '/r', '/r/reports')).to.deep.equal({
      results: '../a/run-1/results/',
      logs: '../a/run-1/logs.txt',
      manifest: '../a/run-1/manifest.json',
    });
    expect(linksOf('/r/a#?/run-1/results', '/r', '/r')?.logs).to.equal('a%23%3F/run-1/logs.txt');
    expect(linksOf('/elsewhere/a/run-1/results', '/r', '/r')).to.equal(null);
    expect(linksOf('/r/a/run-1/results', '/r', null)).to.equal(null);
    expect(data(null).attempts.every((a) => a.links === null)).to.equal(true);
  });

  it("links to the run's changes.patch and its latest grade's log only when they are there, under the results root", () => {
    const rec = status('a', {
      resultsDir: '/r/a/run-2/results',
      run: 2,
      grades: [1, 2].map((k) => ({
        k,
        run: 2,
        gradeHash: 'g',
        state: 'graded' as const,
        resultsDir: `/r/a/run-2/grade-${k}/results`,
        image: 'g',
        createdAt: 'c',
      })),
    });
    const files = runFiles(rec);
    expect(files).to.deep.equal({ patch: '/r/a/run-2/workspace/changes.patch', gradeLog: '/r/a/run-2/grade-2/logs.txt' });
    expect(runFiles(status('b', { resultsDir: '/r/b/run-1/results' }))).to.deep.equal({ patch: '/r/b/run-1/workspace/changes.patch' });
    expect(runFiles({ run: 1 })).to.deep.equal({});
    expect(runFiles(undefined)).to.deep.equal({});
    // an earlier run's grade is not the current run's
    expect(runFiles({ ...rec, run: 3, resultsDir: '/r/a/run-3/results' }).gradeLog).to.equal(undefined);
    expect(linksOf(rec.resultsDir, '/r', '/r', files, new Set(Object.values(files)))).to.deep.include({
      patch: 'a/run-2/workspace/changes.patch',
      gradeLog: 'a/run-2/grade-2/logs.txt',
    });
    expect(linksOf(rec.resultsDir, '/r', '/r/reports', files, new Set([files.patch as string]))).to.deep.equal({
      results: '../a/run-2/results/',
      logs: '../a/run-2/logs.txt',
      manifest: '../a/run-2/manifest.json',
      patch: '../a/run-2/workspace/changes.patch',
    });
    // not there: no link; a grade folder recorded outside the results root: no link
    expect(linksOf(rec.resultsDir, '/r', '/r', files)).to.not.have.any.keys('patch', 'gradeLog');
    expect(linksOf(rec.resultsDir, '/r', '/r', { gradeLog: '/elsewhere/logs.txt' }, new Set(['/elsewhere/logs.txt']))).to.not.have.key('gradeLog');
    // the report's attempt: plain-ok's links, and the others' none
    const d = data();
    const ok = d.attempts.find((a) => a.name === 'plain-ok');
    expect(ok?.links).to.deep.include({ patch: 'plain-ok/run-1/workspace/changes.patch', gradeLog: 'plain-ok/run-1/grade-1/logs.txt' });
    expect(ok?.grade).to.equal('grade-1: pass');
    expect(d.attempts.filter((a) => a.links?.patch || a.links?.gradeLog).map((a) => a.name)).to.deep.equal(['plain-ok']);
  });

  it("with spec.grade, the grader's verdict, score and grade (k) stand for the run, never the attempt's own score", () => {
    const g = { image: null, command: ['true'], env: {}, fixture: null, fixtureDigest: null, protect: [], deadlineSeconds: null };
    const G = { ...g, resources: { cpus: null, memoryBytes: null, pids: 512 }, network: { mode: 'none' as const }, when: 'always' as const };
    const policy = { ...fleet().sets.get('swe')!.policy, name: 'gs', axes: ['seed'] };
    const loaded = { ...spec('gs-0', { grade: G }), set: { set: policy, coords: { seed: '0' }, index: 0 } };
    const grade = (k: number, score: number, passed: boolean) => ({
      k,
      run: 1,
      gradeHash: gradeHash(G),
      state: 'graded' as const,
      score,
      passed,
      resultsDir: `/r/gs-0/run-1/grade-${k}/results`,
      image: 'g',
      createdAt: 'c',
    });
    const rec = status('gs-0', {
      phase: 'Succeeded',
      reason: 'Completed',
      exitCode: 0,
      score: 1,
      startedAt: new Date(T0).toISOString(),
      finishedAt: new Date(T0 + 1000).toISOString(),
      resultsDir: '/r/gs-0/run-1/results',
      grades: [grade(1, 1, true), grade(2, 0, false)],
    });
    const statuses = new Map([['gs-0', rec]]);
    const s = summarize(new Map([['gs', { policy, children: [{ name: 'gs-0', coords: { seed: '0' }, loaded }] }]]), statuses, NOW);
    const common = {
      childLabels: new Map(),
      plain: [],
      statuses,
      now: NOW,
      instance: 'i',
      maxRunning: 1,
      resultsRoot: ROOT,
      linkBase: ROOT,
      mode: 'file' as const,
    };
    const [a] = buildReport({ ...common, sets: s.sets }).attempts;
    expect(a).to.include({ outcome: 'failed', score: 0, grade: 'grade-2: fail (score 0)' });
    // a plain attempt with its class from its grade (report/from-load.ts gives it)
    const [p] = buildReport({ ...common, sets: [], plain: [{ name: 'gs-0', labels: {}, graded: { outcome: 'failed' } }] }).attempts;
    expect(p).to.include({ outcome: 'failed', score: 0, grade: 'grade-2: fail (score 0)' });
  });

  it('graders hold slots: the timeline draws each after its run, the slots line counts it', () => {
    const d = data();
    const ok = d.attempts.find((a) => a.name === 'plain-ok');
    expect(ok?.grading).to.deep.equal([{ k: 1, startedAt: T0 + 24_000, finishedAt: T0 + 26_000, running: false }]);
    const g = { k: 1, run: 1, gradeHash: 'h', resultsDir: '/r/g/run-1/grade-1/results', image: 'g', createdAt: new Date(T0).toISOString() };
    const rec = (name: string, grades: GradeRecord[]) =>
      status(name, {
        phase: 'Succeeded',
        createdAt: new Date(T0).toISOString(),
        startedAt: new Date(T0).toISOString(),
        finishedAt: new Date(T0 + 1000).toISOString(),
        grades,
      });
    const at = (s: number) => new Date(T0 + s * 1000).toISOString();
    const r = buildReport({
      sets: [],
      childLabels: new Map(),
      plain: ['a', 'b', 'c'].map((name) => ({ name, labels: {} })),
      statuses: new Map([
        ['a', rec('a', [{ ...g, state: 'graded', passed: true, startedAt: at(2), finishedAt: at(6) }])],
        // a regraded run: both its graders are drawn
        [
          'b',
          rec('b', [
            { ...g, state: 'graded', passed: true, startedAt: at(2), finishedAt: at(3) },
            { ...g, k: 2, state: 'grading', startedAt: at(5) },
          ]),
        ],
        // a grade that never started is not drawn
        ['c', rec('c', [{ ...g, state: 'failed', reason: 'GradeFailed' }])],
      ]),
      now: T0 + 10_000,
      instance: 'i',
      maxRunning: 2,
      resultsRoot: ROOT,
      linkBase: null,
      mode: 'live',
    });
    expect(r.attempts.map((a) => a.grading.length)).to.deep.equal([1, 2, 0]);
    // three runs 0-1 s, two graders 2-3 s, then a's and b's second (running until now)
    expect(r.concurrency).to.deep.equal([
      { t: T0, running: 3 },
      { t: T0 + 1000, running: 0 },
      { t: T0 + 2000, running: 2 },
      { t: T0 + 3000, running: 1 },
      { t: T0 + 5000, running: 2 },
      { t: T0 + 6000, running: 1 },
      { t: T0 + 10_000, running: 0 },
    ]);
    expect(r.summary.window).to.deep.equal({ from: T0, to: T0 + 10_000 });
    const html = renderReport(r);
    expect(html.match(/<rect class="gr"/g)?.length).to.equal(3);
    expect(html).to.include('slots held by runs and graders');
  });

  it('bounds every attempt-controlled string', () => {
    expect(clip('abc', 3)).to.equal('abc');
    expect(clip('abcd', 3)).to.equal('abc…');
    expect(clip('ab\u{1F600}', 3)).to.equal('ab…');
    const huge = 'x'.repeat(100_000);
    const d = buildReport({
      sets: [],
      childLabels: new Map(),
      plain: [{ name: huge, labels: Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`k${i}`, huge])) }],
      statuses: new Map([[huge, status(huge, { message: huge, reason: huge })]]),
      now: NOW,
      instance: 'i',
      maxRunning: 1,
      resultsRoot: ROOT,
      linkBase: ROOT,
      mode: 'file',
    });
    const a = d.attempts[0];
    expect(a?.name.length).to.equal(REPORT_LIMITS.name + 1);
    expect(a?.message.length).to.equal(REPORT_LIMITS.message + 1);
    expect(a?.reason.length).to.equal(REPORT_LIMITS.value + 1);
    expect(Object.keys(a?.labels ?? {})).to.have.length(REPORT_LIMITS.entries);
    expect(a?.links).to.equal(null); // its folder's path is longer than REPORT_LIMITS.path
    expect(renderReport(d).length).to.be.below(60_000);
  });
});

describe('report/render', () => {
  it('matches the golden page (UPDATE_GOLDEN=1 rewrites it: see README, Development)', () => {
    const html = renderReport(data());
    if (process.env.UPDATE_GOLDEN) writeFileSync(GOLDEN, html);
    expect(html).to.equal(readFileSync(GOLDEN, 'utf8'));
  });

  it('escapes attempt-controlled strings: the payload is text in the markup, \\u003c in the data, and the data reads back unchanged', () => {
    const d = data();
    const html = renderReport(d);
    expect(markup(html)).to.not.include('<img');
    expect(markup(html)).to.include(XSS.replace(/</g, '&lt;').replace(/>/g, '&gt;'));
    // One <script> element of data, one of code, and no other script element or event handler.
    expect(html.match(/<script/g)).to.have.length(2);
    expect(html.match(/<\/script>/g)).to.have.length(2);
    expect(html).to.not.match(/\son[a-z]+=(?!alert)/i);
    const json = /<script type="application\/json" id="report-data">([\s\S]*?)<\/script>/.exec(html)?.[1] as string;
    expect(json).to.not.include('<');
    expect(JSON.parse(json)).to.deep.equal(JSON.parse(JSON.stringify(embedded(d))));
    expect(scriptJson({ s: '</script>\u2028&' })).to.equal('{"s":"\\u003c/script\\u003e\\u2028\\u0026"}');
  });

  it('allows by its Content-Security-Policy only its own style and script, by sha256', () => {
    const html = renderReport(data());
    const csp = (/<meta http-equiv="Content-Security-Policy" content="([^"]+)">/.exec(html)?.[1] as string).replace(/&#39;/g, "'");
    const style = /<style>([\s\S]*?)<\/style>/.exec(html)?.[1] as string;
    const script = /<script>([\s\S]*?)<\/script>/.exec(html)?.[1] as string;
    const h = (s: string) => `'sha256-${createHash('sha256').update(s).digest('base64')}'`;
    expect(csp).to.include("default-src 'none'");
    expect(csp).to.include(`style-src ${h(style)}`);
    expect(csp).to.include(`script-src ${h(script)}`);
    expect(csp).to.not.include('unsafe');
    expect(html).to.not.match(/\sstyle="/);
    expect(html).to.not.match(/(src|href)="(https?:)?\/\//);
  });

  it('a report without sets or attempts still renders every section', () => {
    const html = renderReport(
      buildReport({
        sets: [],
        childLabels: new Map(),
        plain: [],
        statuses: new Map(),
        now: NOW,
        instance: 'i',
        maxRunning: 2,
        resultsRoot: ROOT,
        linkBase: ROOT,
        mode: 'file',
      }),
    );
    for (const id of ['summary', 'heatmap', 'timeline', 'attempts']) expect(html).to.include(`<section id="${id}">`);
    expect(html).to.include('No AttemptSets in this report.');
    expect(html).to.include('Nothing has started yet.');
  });
});
