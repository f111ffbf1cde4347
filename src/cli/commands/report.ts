/**
 * `berth report [SET...] [-l SELECTOR] [-o FILE.html] [--max-running N]`: the fleet report, one
 * self-contained HTML file (src/report), from the specs and the status records (no engine).
 * Written to `<results root>/report.html` unless -o says where (`-o -`: stdout); the links into
 * the run folders are relative to the folder the file is written to (stdout: the results root).
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { withLiveTouched } from '../../touch/target';
import { EXIT, REPORT_FILE } from '../../constants';
import { reportFromLoad } from '../../report/from-load';
import { runFiles } from '../../report/model';
import { renderReport } from '../../report/render';
import { loadView } from './view-load';
import { writeFileAtomic } from '../../status/atomic-file';
import type { AttemptStatus } from '../../status/types';
import { defaultMaxRunning, type Context } from '../context';
import { plural } from '../diag';
import { matches } from '../selector';
import { selectorOf } from './get';
import { readBaseline } from './compare';

export interface ReportOptions {
  output?: string;
  /** An earlier `summary -o json`: the report shows the sets compared with it first. */
  baseline?: string;
  selector?: string[];
  /** The slots line of the timeline (default: reconcile's default here). */
  maxRunning?: number;
}

/** How many files are looked at at once. */
const LOOKUPS = 64;

/**
 * The runs' changes.patch and latest grade logs (report/model.ts runFiles) that are there, as
 * regular files (a link is not followed, so never linked): the report links only those.
 */
async function presentFiles(records: Iterable<AttemptStatus>): Promise<Set<string>> {
  const wanted = [...records].flatMap((r) => Object.values(runFiles(r)));
  const present = new Set<string>();
  for (let i = 0; i < wanted.length; i += LOOKUPS) {
    await Promise.all(
      wanted.slice(i, i + LOOKUPS).map(async (f) => {
        const st = await fs.lstat(f).catch(() => undefined);
        if (st?.isFile()) present.add(f);
      }),
    );
  }
  return present;
}

export async function runReport(ctx: Context, sets: string[], o: ReportOptions): Promise<number> {
  const want = selectorOf(o.selector ?? []);
  const [load, recorded] = await Promise.all([loadView(ctx), ctx.store().loadAll()]);
  // a running run's execs and copies, from its run folder (a harvested one's record holds them)
  const statuses = await withLiveTouched(recorded, ctx.resultsRoot);
  const known = new Set(load.sets?.keys() ?? []);
  const missing = sets.filter((s) => !known.has(s));
  if (missing.length) {
    ctx.io.err(`berth: no AttemptSet named ${missing.map((m) => JSON.stringify(m)).join(', ')} in ${ctx.specsDir}\n`);
    return EXIT.failed;
  }
  const baseline = o.baseline === undefined ? undefined : { file: o.baseline, ...(await readBaseline(o.baseline)) };
  const toStdout = o.output === '-';
  const file = toStdout ? undefined : path.resolve(o.output ?? path.join(ctx.resultsRoot, REPORT_FILE));
  const data = reportFromLoad(
    load,
    statuses,
    { sets, keep: (labels) => matches(want, labels), selecting: want.length > 0 },
    {
      now: Date.now(),
      instance: ctx.instance,
      maxRunning: o.maxRunning ?? defaultMaxRunning(),
      resultsRoot: ctx.resultsRoot,
      linkBase: file ? path.dirname(file) : ctx.resultsRoot,
      mode: 'file',
      present: await presentFiles(statuses.values()),
    },
    baseline,
  );
  const html = renderReport(data);
  if (!file) {
    ctx.io.out(html);
    return EXIT.ok;
  }
  try {
    await writeFileAtomic(file, html);
  } catch (err) {
    ctx.io.err(`berth: cannot write the report to ${file}: ${(err as Error).message}\n`);
    return EXIT.failed;
  }
  const s = data.summary;
  ctx.io.out(
    `report of ${plural(s.attempts, 'attempt')} (${s.byOutcome.passed} passed, ${s.byOutcome.failed} failed, ${s.byOutcome.infra} infra, ${s.byOutcome.unfinished} unfinished) written to ${file}\n`,
  );
  return EXIT.ok;
}
