/** stderr shaping: --log-format json lines, the terminal's live progress line, and the controller's activity lines. */
import { expect } from 'chai';
import { bufferIo, jsonLinesIo, wantsJsonLogs } from '../../../src/cli/io';
import { LiveLine } from '../../../src/cli/live-line';
import { plural } from '../../../src/cli/diag';
import { activity, planActivity } from '../../../src/controller/activity';
import { StickyTable } from '../../../src/cli/commands/shared';
import type { AttemptAction, Operation } from '../../../src/plan/types';
import type { GradeRecord } from '../../../src/status/types';
import { status } from '../../support/builders';

describe('stderr shaping', function () {
  it('json: every line becomes one JSON object, partial writes joined, JSON passed as is', function () {
    const b = bufferIo();
    const io = jsonLinesIo(b);
    io.err('berth: warning: careful\nberth: it broke\n[3s] 1 Running');
    io.err('\n{"level":"info","message":"x"}\n\n');
    const lines = b.stderr
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as { level: string; message: string });
    expect(lines.map((l) => [l.level, l.message])).to.deep.equal([
      ['warn', 'careful'],
      ['error', 'it broke'],
      ['info', '[3s] 1 Running'],
      ['info', 'x'],
    ]);
    const one = bufferIo();
    jsonLinesIo(one).err('berth: -l: selector "a in (": column 7: expected\n  a in (\n        ^\n');
    expect(one.stderr.split('\n')).to.have.length(2);
    expect((JSON.parse(one.stderr) as { message: string }).message).to.equal('-l: selector "a in (": column 7: expected\n  a in (\n        ^');
  });

  it('wantsJsonLogs: the last --log-format wins, then BERTH_LOG_FORMAT', function () {
    expect(wantsJsonLogs(['get', '--log-format', 'json'], {})).to.equal(true);
    expect(wantsJsonLogs(['get', '--log-format=json', '--log-format', 'text'], {})).to.equal(false);
    expect(wantsJsonLogs(['get'], { BERTH_LOG_FORMAT: 'json' })).to.equal(true);
  });

  it('a log line written while the live line shows goes above it, and the live line is drawn again', function () {
    let out = '';
    const live = new LiveLine((s) => (out += s));
    live.show('[1s] 1 Running');
    live.above('12:00:00.000 info  a: started run 1\n');
    live.show('[2s] 1 Succeeded');
    live.end();
    // what a terminal shows: each \r\x1b[K wipes the current line
    const screen = out.split('\n').map((l) => l.split('\r\x1b[K').pop());
    expect(screen).to.deep.equal(['12:00:00.000 info  a: started run 1', '[2s] 1 Succeeded', '']);
  });

  it('plural', function () {
    expect([plural(1, 'attempt'), plural(2, 'attempt'), plural(0, 'container')]).to.deep.equal(['1 attempt', '2 attempts', '0 containers']);
  });

  it('activity: one line for what an action did', function () {
    const a = (kind: AttemptAction['kind'], types: string[]): AttemptAction =>
      ({
        attempt: 'a',
        kind,
        summary: '',
        ops: types.map((type) => ({ type, resource: 'x', cause: 'c', id: 'i' })),
        desired: { run: 2 },
      }) as unknown as AttemptAction;
    // the action's first n operations done
    const did = (x: AttemptAction, n: number, rec: Parameters<typeof activity>[2]) => activity(x, x.ops.slice(0, n), rec);
    expect(did(a('provision', ['create-container', 'start']), 2, undefined)).to.equal('a: created run 2; started run 2');
    expect(
      did(a('replace', ['stop', 'finish', 'remove-container', 'create-container', 'start']), 5, status('a', { phase: 'Failed', reason: 'Replaced' })),
    ).to.equal('a: stopped; finished Failed (Replaced); removed 1 container; replaced: created run 2; started run 2');
    expect(did(a('finish', ['finish']), 1, status('a', { phase: 'Succeeded', reason: 'Completed', exitCode: 0 }))).to.equal(
      'a: finished Succeeded (Completed, exit 0)',
    );
    expect(did(a('collect', ['remove-container', 'remove-network', 'remove-network', 'forget']), 4, undefined)).to.equal(
      'a: removed 1 container, 2 networks; forgotten (no spec)',
    );
    expect(did(a('provision', ['create-container', 'start']), 1, undefined)).to.equal('a: created run 2');
    expect(did(a('attest', ['record']), 1, undefined)).to.equal(undefined);
    // a run made and ended in one action (its container exited before it was looked at: a follow-up finished it): in the order done
    expect(
      did(
        a('provision', ['create-container', 'start', 'attest-start', 'finish', 'harvest']),
        5,
        status('a', { phase: 'Succeeded', reason: 'Completed', exitCode: 0 }),
      ),
    ).to.equal('a: created run 2; started run 2; finished Succeeded (Completed, exit 0)');
  });

  it("activity: grading in the log: a grade begun (a regrade says why), its verdict; the grader's removal is not the run's", function () {
    const grader = (k: number) => ({ k, run: 1 }) as never;
    const a = (ops: Operation[]): AttemptAction => ({ attempt: 'g', kind: 'grade', summary: '', ops });
    const begin = (k: number, cause: string): Operation => ({ type: 'begin-grade', resource: 'attempt:g', grader: grader(k), fresh: true, cause });
    const fin = (k: number): Operation => ({ type: 'finish-grade', resource: 'attempt:g', run: 1, k, cause: 'grader exited' });
    const rm: Operation = { type: 'remove-container', resource: 'container:berth-x-g_grade_1_1', id: 'i', cause: 'its grade ended' };
    const graded = (k: number, over: Partial<GradeRecord>) =>
      status('g', { grades: [{ k, run: 1, gradeHash: 'h', state: 'graded', resultsDir: '/r', image: 'i', createdAt: 'x', ...over }] });
    expect(activity(a([begin(1, 'the run finished')]), [begin(1, 'the run finished')], undefined)).to.equal('g: grading run 1 (grade 1)');
    expect(activity(a([fin(1), rm]), [fin(1), rm], graded(1, { passed: true, score: 1 }))).to.equal('g: graded pass (score 1)');
    expect(activity(a([fin(1)]), [fin(1)], graded(1, { passed: false, exitCode: 1 }))).to.equal('g: graded fail (exit 1)');
    expect(activity(a([fin(1)]), [fin(1)], graded(1, { state: 'timedOut', reason: 'GradeTimedOut', message: 'past its deadline' }))).to.equal(
      'g: grade 1 of run 1 failed (GradeTimedOut: past its deadline)',
    );
    const re = begin(2, 'spec.grade changed: graded again');
    expect(activity(a([re]), [re], undefined)).to.equal('g: regrading run 1 (grade 2): spec.grade changed');
    const plan = { actions: ['a', 'b', 'c'].map((n) => ({ ...a([begin(2, 'spec.grade changed: graded again')]), attempt: n })) };
    expect(planActivity(plan)).to.deep.equal(['regrading 3 runs: spec.grade changed']);
    expect(planActivity({ actions: [a([begin(1, 'the run finished')])] })).to.deep.equal([]);
  });

  it('a table printed a batch at a time (get -w, events -w): later rows line up under the first header', function () {
    const t = new StickyTable([0, 9]);
    const first = t.render([
      ['NAME', 'PHASE', 'RESULT'],
      ['a-long-name', 'Running', '-'],
    ]);
    const later = t.render([['b', 'Succeeded', 'passed']]);
    const col = (line: string, word: string) => line.indexOf(word);
    const [head] = first.split('\n');
    expect(col(later, 'Succeeded')).to.equal(col(head as string, 'PHASE'));
    expect(col(later, 'passed')).to.equal(col(head as string, 'RESULT'));
  });
});
