/**
 * `berth summary [SET...] [-l k=v] [-o table|json|junit] [--samples AXIS]`: how the AttemptSets
 * did, from the specs and the status records (no engine). See sets/summary.ts for what is counted.
 */
import { EXIT } from '../../constants';
import { loadView } from './view-load';
import { toJunit } from '../../sets/junit';
import { toMarkdown } from '../../sets/markdown';
import { setsOfLoad, summarize, summarizePlain, type SetSummary, type Summary } from '../../sets/summary';
import type { SetPolicy } from '../../spec/types';
import { describeEngineError } from '../../engine/errors';
import { imageIndex } from '../../observe/images';
import { tagMoves, tagMoveText } from '../../observe/tag-moves';
import { type Context } from '../context';
import { duration, table } from './shared';
import { formatIssue } from '../../spec/issue';
import { matches } from '../selector';
import { selectorOf } from './get';
import { withLiveTouched } from '../../touch/target';

export interface SummaryOptions {
  output?: 'table' | 'json' | 'junit' | 'markdown';
  selector?: string[];
  samples?: string;
}

export async function runSummary(ctx: Context, sets: string[], o: SummaryOptions): Promise<number> {
  const want = selectorOf(o.selector ?? []);
  const [load, recorded] = await Promise.all([loadView(ctx), ctx.store().loadAll()]);
  // a running run's execs and copies are counted from its run folder (its record has them once harvested)
  const statuses = await withLiveTouched(recorded, ctx.resultsRoot);
  const known = new Set(load.sets?.keys() ?? []);
  const missing = sets.filter((s) => !known.has(s));
  if (missing.length) {
    ctx.io.err(`berth: no AttemptSet named ${missing.map((m) => JSON.stringify(m)).join(', ')} in ${ctx.specsDir}\n`);
    return EXIT.failed;
  }
  const all = setsOfLoad(load.specs, load.sets ?? new Map());
  const chosen = new Map(
    [...all]
      .filter(([name]) => sets.length === 0 || sets.includes(name))
      // A selector picks children by their labels (a child that did not load has none).
      .map(
        ([name, g]) =>
          [name, { ...g, children: want.length ? g.children.filter((c) => c.loaded && matches(want, c.loaded.spec.labels)) : g.children }] as const,
      )
      .filter(([, g]) => g.children.length > 0 || want.length === 0),
  );
  // The plain Attempts are a suite of their own, unless sets were named (a CI suite of plain attempts is not tests="0").
  const plain = sets.length
    ? undefined
    : summarizePlain(
        load.specs.filter((s) => !want.length || matches(want, s.spec.labels)),
        statuses,
      );
  const summary = await withTagMoves(ctx, { ...summarize(chosen, statuses, Date.now(), o.samples), ...(plain ? { attempts: plain } : {}) }, chosen);
  if (o.output === 'json') ctx.io.out(JSON.stringify(summary, null, 2) + '\n');
  else if (o.output === 'junit') ctx.io.out(toJunit(summary));
  else if (o.output === 'markdown') ctx.io.out(toMarkdown(summary));
  else {
    const text = [
      ...summary.sets.map((s) => renderSet(s, `SET ${s.name}`)),
      ...(summary.attempts ? [renderSet(summary.attempts, 'ATTEMPTS (in no set)')] : []),
    ];
    ctx.io.out(text.length ? text.join('\n') : 'No AttemptSets and no attempts.\n');
  }
  return EXIT.ok;
}

/**
 * The tags that moved under each set's pinned image, as the engine names them now (one image
 * list). The summary reads no engine otherwise: when it does not answer, the sets carry no
 * `tagMoved` and a warning says so.
 */
async function withTagMoves(ctx: Context, summary: Summary, sets: ReadonlyMap<string, { policy: SetPolicy }>): Promise<Summary> {
  const pins = ctx.store().pins.reload();
  const pinned = [...sets.values()].filter((g) => pins.has(g.policy.name)).map((g) => g.policy);
  if (pinned.length === 0) return { ...summary, sets: summary.sets.map((s) => ({ ...s, tagMoved: [] })) };
  let index;
  try {
    index = imageIndex(await ctx.engine().images.list([]));
  } catch (err) {
    ctx.io.err(`berth: warning: whether a pinned image's tag moved is not known: ${describeEngineError(err)}\n`);
    return summary;
  }
  const moves = tagMoves(pins, pinned, index);
  return { ...summary, sets: summary.sets.map((s) => ({ ...s, tagMoved: moves.filter((m) => m.set === s.name) })) };
}

const pct = (x: number | null | undefined) => (x === null || x === undefined ? '-' : x.toFixed(2));
const dur = (x: number | null) => (x === null ? '-' : duration(x));

function passAt(p: Record<string, number>): string {
  const ks = Object.keys(p).map(Number);
  if (!ks.length) return '-';
  const show = [...new Set([1, Math.max(...ks)])];
  return show.map((k) => `pass@${k} ${pct(p[String(k)])}`).join('  ');
}

function renderSet(s: SetSummary, title: string): string {
  const out: string[] = [];
  const infra = Object.entries(s.infraReasons)
    .map(([r, n]) => `${r} ${n}`)
    .join(', ');
  out.push(
    `${title}: ${s.n} attempts, ${s.passed} passed, ${s.failed} failed, ${s.infra} infra${infra ? ` (${infra})` : ''}, ${s.skipped} skipped, ${s.unfinished} unfinished`,
  );
  const held = s.heldBy?.[0];
  if (held)
    out.push(
      `  held at its last good spec: its file is broken (${formatIssue(held)}${(s.heldBy?.length ?? 0) > 1 ? `, and ${(s.heldBy?.length ?? 1) - 1} more` : ''}); the counts are its last good expansion's`,
    );
  if (s.resultsTruncated) out.push(`  results truncated: ${s.resultsTruncated} (past spec.harvest's caps; their manifest.json lists what was left out)`);
  // runs reached into by berth exec, berth cp or the API: their verdicts are not clean runs'
  if (s.touched) out.push(`  TOUCHED: ${s.touched} of ${s.n} (berth exec, berth cp or the API; each run's execs.jsonl says what)`);
  out.push(`  pass rate ${pct(s.passRate)} ± ${pct(s.stderr)}   ${passAt(s.passAtK)}${s.samplesAxis ? `   (samples: ${s.samplesAxis})` : ''}`);
  if (s.grades) {
    // spec.grade: which grade the outcomes come from (each child's latest of its run)
    const by = Object.entries(s.grades).sort(([a], [b]) => Number(a) - Number(b));
    const graded = by.reduce((n, [, c]) => n + c, 0);
    out.push(`  graded: ${graded} of ${s.n} by their latest grade (${by.map(([k, c]) => `grade-${k}: ${c}`).join(', ')})`);
  }
  out.push(`  duration p50 ${dur(s.durationMs.p50)} p95 ${dur(s.durationMs.p95)}   queue wait p50 ${dur(s.queueMs.p50)} p95 ${dur(s.queueMs.p95)}`);
  if (s.image) out.push(`  image ${s.image.ref} ${s.image.id}${s.image.repoDigests.length ? ` (${s.image.repoDigests.join(', ')})` : ''}`);
  for (const m of s.tagMoved ?? []) out.push(`  WARNING: ${tagMoveText(m)}`);
  if (!s.axes.length) return out.join('\n') + '\n';
  const rows = [['AXIS', 'VALUE', 'N', 'PASSED', 'FAILED', 'INFRA', 'PASS RATE', '± SE', 'PASS@K']];
  for (const [axis, values] of Object.entries(s.byAxis)) {
    for (const v of values)
      rows.push([axis, v.value, String(v.n), String(v.passed), String(v.failed), String(v.infra), pct(v.passRate), pct(v.stderr), passAt(v.passAtK)]);
  }
  out.push(
    ...table(rows)
      .trimEnd()
      .split('\n')
      .map((l) => `  ${l}`),
  );
  return out.join('\n') + '\n';
}
