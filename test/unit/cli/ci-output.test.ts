/** CI niceties, pure: spec errors as GitHub Actions annotations; the progress line, its estimate and colour. */
import { expect } from 'chai';
import { githubAnnotations, outcomeAnnotations } from '../../../src/cli/format-errors';
import { estimateLeft, progressText, useColour } from '../../../src/cli/progress';
import type { SpecError } from '../../../src/spec/types';

describe('CI output', function () {
  it('spec errors as ::error annotations, the file relative to the workspace, data and properties escaped', function () {
    const e: SpecError = { file: 'specs/a.yaml', line: 4, col: 10, path: 'spec.memory', code: 'schema', message: 'unknown field "memory", 100%\nsure' };
    expect(githubAnnotations([e], { cwd: '/w/repo', workspace: '/w/repo' })).to.equal(
      '::error file=specs/a.yaml,line=4,col=10,title=berth%3A schema at spec.memory::spec.memory: unknown field "memory", 100%25%0Asure\n',
    );
    // outside the workspace: the path as shown; a comma in a property is escaped
    expect(githubAnnotations([{ ...e, file: '/elsewhere/x,y.yaml', path: '' }], { cwd: '/w/repo', workspace: '/w/repo' })).to.match(
      /^::error file=\/elsewhere\/x%2Cy\.yaml,line=4,col=10,title=berth%3A schema::unknown/,
    );
    expect(githubAnnotations([], { cwd: '/' })).to.equal('');
  });

  it('attempts that did not pass as ::error annotations at their spec, titled by how they count; past 50, a notice counts the rest', function () {
    const out = outcomeAnnotations(
      [
        { name: 'g-0', outcome: 'failed', text: 'failed (score 0)', file: '/w/repo/specs/g.yaml', line: 4 },
        { name: 'g-1', outcome: 'infra', text: 'infra (ScoreMissing)' },
      ],
      { cwd: '/w/repo', workspace: '/w/repo' },
    );
    expect(out).to.equal(
      '::error file=specs/g.yaml,line=4,title=berth%3A attempt g-0 failed::g-0 failed (score 0)\n' +
        '::error title=berth%3A attempt g-1 ended with an infrastructure outcome::g-1 infra (ScoreMissing)\n',
    );
    const many = Array.from({ length: 52 }, (_, i) => ({ name: `a${i}`, outcome: 'failed' as const, text: 'failed' }));
    const lines = outcomeAnnotations(many, { cwd: '/' }).trimEnd().split('\n');
    expect(lines).to.have.length(51);
    expect(lines[50]).to.equal('::notice title=berth::2 more attempts did not pass (berth summary lists them all)');
  });

  it('progress: done of total by outcome, the rest by phase; an estimate only once something settled; colour only on a terminal without NO_COLOR', function () {
    const p = {
      total: 10,
      outcomes: { passed: 2, failed: 1 },
      busy: new Map([
        ['Running', 4],
        ['Pending', 3],
      ]),
    };
    expect(progressText(p)).to.equal('3/10 done: 2 passed, 1 failed; 3 Pending, 4 Running');
    expect(progressText({ total: 2, outcomes: {}, busy: new Map([['Pending', 2]]) })).to.equal('0/2 done; 2 Pending');
    expect(progressText(p, true)).to.contain('\x1b[32m2 passed\x1b[0m').and.contain('\x1b[31m1 failed\x1b[0m');
    expect(estimateLeft(p, 30_000)).to.equal('about 1m10s left');
    expect(estimateLeft({ ...p, outcomes: {} }, 30_000)).to.equal(undefined);
    // the pace to the last one settled, less the time since: it counts down, and says so once the time is used up (never frozen at 1s)
    const nine = { total: 10, outcomes: { passed: 9 }, busy: new Map([['Running', 1]]) };
    expect(estimateLeft(nine, 18_000, 18_000)).to.equal('about 2s left');
    expect(estimateLeft(nine, 19_000, 18_000)).to.equal('about 1s left');
    expect(estimateLeft(nine, 44_000, 18_000)).to.equal('longer than the pace so far: 26s since one settled');
    expect(useColour(true, {})).to.equal(true);
    expect(useColour(true, { NO_COLOR: '1' })).to.equal(false);
    expect(useColour(false, {})).to.equal(false);
  });
});
