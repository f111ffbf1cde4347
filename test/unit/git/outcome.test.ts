/**
 * A git source's revision outcomes with their sets: the first revision's outcome carries its
 * sets' children as the summary judges them; the next revision's carries the comparison with
 * it (its own children paired by name with the same children there), in the file, in the log
 * line and in the notification POSTed to --notify-url (a server on loopback).
 */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { compareRevisions, RevisionOutcomes, type RevisionOutcome } from '../../../src/git/outcome';
import type { LoadedSet, LoadedSpec, SetPolicy } from '../../../src/spec/types';
import type { AttemptStatus } from '../../../src/status/types';
import type { Logger } from '../../../src/util/log';
import { spec, status } from '../../support/builders';

const R1 = 'a1'.repeat(20);
const R2 = 'b2'.repeat(20);
const R3 = 'c3'.repeat(20);
const TASKS = ['t1', 't2', 't3', 't4', 't5', 't6', 't7'];

const policy: SetPolicy = {
  name: 'ev',
  axes: ['task'],
  maxParallel: null,
  failFast: false,
  maxFailed: null,
  infra: [],
  score: { file: 'score.json', pass: 1 },
  source: { file: 'ev.yaml', line: 1, col: 1 },
};

/** The load: set ev (one child per task, hash h-ev-<task>) and a plain attempt `solo`. */
function load(hash = (t: string) => `h-ev-${t}`): { specs: LoadedSpec[]; sets: Map<string, LoadedSet> } {
  const kids = TASKS.map((t, i): LoadedSpec => ({ ...spec(`ev-${t}`, {}, hash(t)), set: { set: policy, coords: { task: t }, index: i } }));
  return {
    specs: [...kids, spec('solo')],
    sets: new Map([['ev', { policy, children: kids.map((k) => k.spec.name), coords: TASKS.map((task) => ({ task })), valid: true }]]),
  };
}

const rec = (name: string, revision: string, score: number | undefined, hash = `h-${name}`): AttemptStatus =>
  status(name, {
    phase: 'Succeeded',
    revision,
    specHash: hash,
    ...(score === undefined ? {} : { score }),
    startedAt: '2026-01-01T00:00:00Z',
    finishedAt: `2026-01-01T00:0${revision === R1 ? 1 : 2}:00Z`,
  });

describe('git/outcome: a revision compared with the one before', () => {
  let root: string;
  let lines: string[];
  let posted: { revision: string; body: string }[];
  let server: ReturnType<typeof createServer>;
  let url: string;
  const log = { info: (m: string) => lines.push(m), warn: (m: string) => lines.push(`WARN ${m}`) } as unknown as Logger;

  beforeEach(async () => {
    root = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-outcome-'));
    lines = [];
    posted = [];
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString('utf8')));
      req.on('end', () => {
        posted.push({ revision: String(req.headers['x-berth-revision']), body });
        res.end('ok');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  });
  afterEach(async () => {
    await new Promise((resolve) => server.close(resolve));
    await fs.rm(root, { recursive: true, force: true });
  });

  it('the first outcome carries its sets; the next one the comparison, in its file, its log line and its notification', async () => {
    const outcomes = new RevisionOutcomes({ root, url: 'file:///repo', log, notify: { url, secret: 's' } });
    // R1: every task passes but t7, whose score is missing (infra); solo is a plain attempt
    const first = new Map(TASKS.map((t) => [`ev-${t}`, rec(`ev-${t}`, R1, t === 't7' ? undefined : 1)]));
    first.set('solo', rec('solo', R1, undefined));
    await outcomes.check(first.values(), load());
    await outcomes.drain();
    const one = JSON.parse(await fs.readFile(path.join(root, 'outcomes', `${R1}.json`), 'utf8')) as RevisionOutcome;
    expect(one.sets).to.deep.equal([
      {
        name: 'ev',
        axes: ['task'],
        samplesAxis: null,
        children: TASKS.map((t) => ({
          name: `ev-${t}`,
          coords: { task: t },
          outcome: t === 't7' ? 'infra' : 'passed',
          reason: t === 't7' ? 'ScoreMissing' : null,
        })),
      },
    ]);
    expect(one).to.not.have.property('comparison');
    expect(await fs.readFile(path.join(root, 'outcomes', 'latest'), 'utf8')).to.equal(`${R1}\n`);

    // R2 changes t1-t6 and t7: t1-t6 now score 0, t7 passes; solo is untouched (still R1's)
    const hash2 = (t: string) => `h2-ev-${t}`;
    const second = new Map(first);
    for (const t of TASKS) second.set(`ev-${t}`, rec(`ev-${t}`, R2, t === 't7' ? 1 : 0, hash2(t)));
    await outcomes.check(second.values(), load(hash2));
    await outcomes.drain();
    const two = JSON.parse(await fs.readFile(path.join(root, 'outcomes', `${R2}.json`), 'utf8')) as RevisionOutcome;
    const c = two.comparison!;
    expect(c).to.deep.include({ against: R1, mode: 'baseline', regression: true, baseline: { file: `${R1}.json`, generatedAt: '2026-01-01T00:01:00Z' } });
    const x = c.sets[0]!.comparisons[0]!;
    // 6 tasks passed → failed (t7 was infra: left out): p = 2 / 2^6
    expect(x).to.deep.include({ cells: 6, samples: 6, passed: { before: 6, after: 0 }, difference: -1, pValue: 0.03125, regression: true });
    expect(x.regressions.map((r) => r.coords.task)).to.deep.equal(['t1', 't2', 't3', 't4', 't5', 't6']);
    expect(x.leftOut.map((l) => [l.before.outcome, l.after.outcome])).to.deep.equal([['infra', 'passed']]);
    expect(lines.at(-2)).to.match(
      new RegExp(
        `^revision ${R2.slice(0, 12)}: every attempt finished \\(7 Succeeded\\); outcome in .*${R2}\\.json; against ${R1.slice(0, 12)}: set ev 6/6 → 0/6 \\(-100\\.0 pp, p = 0\\.031, a regression; 6 fell, 0 rose\\)$`,
      ),
    );
    // the notification is the file, comparison and all
    expect(posted.map((p) => p.revision)).to.deep.equal([R1, R2]);
    expect(posted[1]?.body).to.equal(await fs.readFile(path.join(root, 'outcomes', `${R2}.json`), 'utf8'));

    // R3 touches only t1 (passes again): compared with R2 on t1 alone
    const third = new Map(second);
    third.set('ev-t1', rec('ev-t1', R3, 1, 'h3'));
    await outcomes.check(
      third.values(),
      load((t) => (t === 't1' ? 'h3' : hash2(t))),
    );
    await outcomes.drain();
    const three = JSON.parse(await fs.readFile(path.join(root, 'outcomes', `${R3}.json`), 'utf8')) as RevisionOutcome;
    expect(three.comparison?.against).to.equal(R2);
    expect(three.comparison?.sets[0]?.comparisons[0]).to.deep.include({ cells: 1, samples: 1, discordant: { worse: 0, better: 1 }, pValue: 1, unpaired: [] });
    outcomes.close();
  });

  it('no comparison without a set in common, or without sets before (an outcome written by an older berth)', () => {
    const base: RevisionOutcome = { revision: R1, url: 'u', finishedAt: '', counts: {}, attempts: [] };
    const now: RevisionOutcome = { ...base, revision: R2, sets: [{ name: 'ev', axes: ['task'], samplesAxis: null, children: [] }] };
    expect(compareRevisions(base, now)).to.equal(undefined);
    expect(compareRevisions({ ...base, sets: [{ name: 'other', axes: [], samplesAxis: null, children: [] }] }, now)).to.equal(undefined);
  });
});
