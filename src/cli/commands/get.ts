/**
 * `berth get [NAME...] [-l SELECTOR] [-o wide|json|yaml|name] [--no-headers] [--sets]`: the attempts
 * and their status, or the AttemptSets with their children counted by phase.
 */
import type * as Yaml from 'yaml';
import { EXIT, PHASES, REASONS } from '../../constants';
import { latestGrade } from '../../sets/grade-state';
import { graderImage, gradeLabel } from '../../sets/grade-text';
import { heldBy } from '../../spec/held';
import { formatIssue } from '../../spec/issue';
import { diag, plural } from '../diag';
import type { LoadReport } from '../../spec/loader';
import { loadView } from './view-load';
import type { SpecError } from '../../spec/types';
import type { DamagedRecord } from '../../status/store';
import type { AttemptStatus, Touched } from '../../status/types';
import { touchedOf } from '../../touch/target';
import type { LoadedSpec, NormalizedAttempt } from '../../spec/types';
import { cellText, JsonPathError, parseCustomColumns, parsePath, parseTemplate, renderTemplate, sortByPath } from '../jsonpath';
import { UsageError, type Context } from '../context';
import { matches, parseSelectors, SelectorError, type Selector } from '../selector';
import { outcomeOf, watched } from '../wait-condition';
import type { Classified } from '../../sets/outcome';
import { toItem, toList, toSetItem, toSetList } from './get-item';
import { touchedText } from '../../touch/text';
import type * as GetNotes from './get-notes';
import type * as GetWatch from './get-watch';
import { age, duration, table } from './shared';
import { pageOf } from './page';

/** `-o yaml` only: yaml is loaded when it is asked for (it costs ~18 ms of every command that imports this file). */
function yamlOf(doc: unknown): string {
  return (require('yaml') as typeof Yaml).stringify(doc);
}

export interface GetOptions {
  /** Also `jsonpath=TEMPLATE` and `custom-columns=SPEC` (jsonpath.ts). */
  output?: 'wide' | 'json' | 'yaml' | 'name' | 'text' | `jsonpath=${string}` | `custom-columns=${string}`;
  /** `--sort-by=.path`: rows in the order of the value the path reaches in each item (kubectl's). */
  sortBy?: string;
  selector?: string[];
  /** Rows of AttemptSets (counts of their children by phase) instead of attempts. */
  sets?: boolean;
  /** Tables without their header row (kubectl's --no-headers). */
  headers?: boolean;
  /** -w: after the listing, print changes until SIGINT/SIGTERM (get-watch.ts). */
  watch?: boolean;
  /** Ends a watch (tests; the CLI ends it with a signal). */
  signal?: AbortSignal;
  /** `--limit N`: at most N attempts, and a token for the rest (kubectl's limit and continue; page.ts). */
  limit?: number;
  /** `--continue TOKEN`: the page after the one that gave the token. */
  continue?: string;
}

export interface Row {
  name: string;
  phase: string;
  /**
   * How the run counts (sets/outcome.ts, as summary, the report and the end line of --wait judge
   * it): passed, failed (a task outcome), infra, skipped; unfinished while it is not settled.
   */
  outcome: Classified;
  /** The score that decided it: the latest grade's when graded, else the score file's; null without one. */
  score: number | null;
  reason: string;
  exitCode: number | null;
  run: number;
  age: string;
  duration: string;
  labels: Record<string, string>;
  image: string;
  command: string[] | null;
  /** The normalized spec (`-o yaml|json` show it whole); null without a valid spec. */
  spec: NormalizedAttempt | null;
  results: string;
  status: AttemptStatus | null;
  /** Set when the attempt's status record is damaged (and so not read). */
  damaged?: DamagedRecord;
  /** The spec errors holding it at its last good spec (spec/held.ts), when its spec broke after it ran. */
  held?: SpecError[];
  /** Its current run had execs or copies (berth exec, berth cp, the API): counted from its run folder while it runs. */
  touched?: Touched;
  /** An AttemptSet's child: its set and coordinates (every axis value, as text; labels hold only those that are label values). */
  cell?: { set: string; coords: Record<string, string> };
}

/** A child's coordinates in a word: `model=m1,task=django-11099`, axes as the set declares them. */
export function coordsText(coords: Readonly<Record<string, string>>): string {
  return Object.entries(coords)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}

/** The `-l` flags as one selector; one that cannot be parsed is a usage error that points at the problem. */
export function selectorOf(flags: readonly string[]): Selector {
  try {
    return parseSelectors(flags);
  } catch (err) {
    if (!(err instanceof SelectorError)) throw err;
    throw new UsageError(`-l: ${err.message}\n  ${err.selector}\n  ${' '.repeat(err.offset)}^`);
  }
}

/** The rows of the attempts named (all when none is) that the selector matches, sorted by name. */
export async function collectRows(ctx: Context, wanted: readonly string[] = [], selector: readonly string[] = []): Promise<Row[]> {
  return (await collectView(ctx, wanted, selector)).rows;
}

/** collectRows, with the specs load it read. */
export async function collectView(ctx: Context, wanted: readonly string[] = [], selector: readonly string[] = []): Promise<{ rows: Row[]; load: LoadReport }> {
  const want = selectorOf(selector);
  const only = wanted.length ? new Set(wanted) : undefined;
  const [load, statuses] = await Promise.all([loadView(ctx), ctx.store().loadAll()]);
  const store = ctx.store();
  const damaged = store.damaged();
  const specs = new Map(load.specs.map((s) => [s.spec.name, s]));
  const all = new Set([...specs.keys(), ...statuses.keys(), ...damaged.keys()]);
  const now = Date.now();
  const rows: Row[] = [];
  for (const n of [...all].sort()) {
    if (only && !only.has(n)) continue;
    const spec = specs.get(n)?.spec;
    const labels = spec?.labels ?? {};
    if (!matches(want, labels)) continue;
    rows.push(rowOf(ctx.specsDir, load, specs.get(n), n, statuses.get(n), (st) => (st ? undefined : store.damagedRecordOf(n)), now));
  }
  // a running run's execs and copies, from its run folder (a harvested run's record holds them)
  for (const r of rows) await withTouched(r, ctx.resultsRoot);
  return { rows, load };
}

/** The score that decides a run: the latest grade's when spec.grade judges it, else its score file's; null without one. */
export function scoreOf(loaded: LoadedSpec | undefined, st: AttemptStatus | undefined): number | null {
  const score = loaded?.spec.grade ? (st ? latestGrade(st)?.score : undefined) : st?.score;
  return typeof score === 'number' && Number.isFinite(score) ? score : null;
}

/**
 * One attempt's row: its spec (if it loaded), its record (if any; a damaged one as `damaged`), as
 * `get` shows it. What the API's GET /v1/attempts/NAME answers with too (its item, toItem).
 */
export function rowOf(
  specsDir: string,
  load: LoadReport,
  loaded: LoadedSpec | undefined,
  n: string,
  st: AttemptStatus | undefined,
  damagedOf: (st: AttemptStatus | undefined) => DamagedRecord | undefined,
  now: number,
): Row {
  const spec = loaded?.spec;
  const labels = spec?.labels ?? {};
  const bad = damagedOf(st);
  const held = loaded ? (loaded.held ?? []) : st ? heldBy(load, specsDir, n, st.source) : [];
  const end = st?.finishedAt ? Date.parse(st.finishedAt) : now;
  return {
    name: n,
    phase: st?.phase ?? 'Pending',
    outcome: outcomeOf(watched(n, loaded, st)),
    score: scoreOf(loaded, st),
    reason: st?.reason ?? (st ? '' : bad ? REASONS.recordDamaged : REASONS.notReconciled),
    exitCode: st?.exitCode ?? null,
    run: st?.run ?? 0,
    age: age(st?.createdAt, now),
    // The engine may stamp a very short run's start after its finish: show 0s, not a negative.
    duration: st?.startedAt ? duration(Math.max(0, end - Date.parse(st.startedAt))) : '-',
    labels,
    image: spec?.image ?? '',
    command: spec?.command ?? null,
    spec: spec ?? null,
    results: st?.resultsDir ?? '',
    status: st ?? null,
    ...(loaded?.set ? { cell: { set: loaded.set.set.name, coords: loaded.set.coords } } : {}),
    ...(bad ? { damaged: bad } : {}),
    ...(held.length ? { held } : {}),
  };
}

/** A row's touches while it runs, from its run folder (a harvested run's record holds them). */
export async function withTouched(r: Row, resultsRoot: string): Promise<Row> {
  const t = r.status && (r.status.touched ?? (r.status.phase === 'Running' || r.status.ended ? await touchedOf(r.status, resultsRoot) : undefined));
  if (t) r.touched = t;
  return r;
}

/**
 * The RESULT cell: `passed`, `failed`, `infra` (with its reason when the REASON column does not
 * already say it, such as ScoreMissing on a Succeeded run), `skipped`, each with the score that
 * decided it; `-` while unfinished. So a run that Succeeded and scored 0 reads `failed (score 0)`.
 */
export function resultText(r: Pick<Row, 'outcome' | 'score' | 'reason'>): string {
  const o = r.outcome;
  if (o.outcome === 'unfinished') return '-';
  const why = o.reason && o.reason !== r.reason && o.outcome !== 'skipped' ? o.reason : undefined;
  const more = [why, r.score !== null ? `score ${r.score}` : undefined].filter((x) => x !== undefined);
  return more.length ? `${o.outcome} (${more.join(', ')})` : o.outcome;
}

export function renderRows(rows: Row[], wide: boolean, headers = true): string {
  const { head, body } = rowCells(rows, wide);
  return headers ? table([head, ...body]) : table(body);
}

/**
 * The header and the cells of `get`'s table. spec.grade: a GRADE column (the latest grade of the
 * current run, named by its k) only when a row has one (or `graded` says so: a watch keeps the
 * columns it began with), so a table of ungraded attempts keeps its columns; -o wide adds its
 * grader's image.
 */
export function rowCells(rows: Row[], wide: boolean, graded?: boolean): { head: string[]; body: string[][]; graded: boolean } {
  const grades = rows.map((r) => (r.status ? latestGrade(r.status) : undefined));
  graded ??= grades.some((g) => g !== undefined);
  // RESULT after the columns berth had, so scripts that read them by position keep working
  const head = ['NAME', 'PHASE', 'REASON', 'EXIT', 'RUN', 'AGE', 'DURATION', 'RESULT'];
  if (graded) head.push('GRADE');
  // an AttemptSet's child: its coordinates (after the columns berth had, as RESULT)
  const cells = rows.some((r) => r.cell);
  if (cells) head.push('CELL');
  if (wide) head.push('TOUCHED', 'IMAGE', 'IMAGE ID', 'LABELS', 'RESULTS');
  if (wide && graded) head.push('GRADER');
  const body = rows.map((r, i) => {
    // `berth delete` marked it (its resources gone, not run again while its spec keeps this hash): said in the row
    const deleted = r.status?.deleted && r.status.deleted.specHash === r.status.specHash && r.status.reason !== REASONS.deleted;
    const reason = deleted ? `${r.reason ? `${r.reason}, ` : ''}deleted` : r.reason || '-';
    const base = [r.name, r.phase, reason, r.exitCode === null ? '-' : String(r.exitCode), String(r.run || '-'), r.age, r.duration, resultText(r)];
    const g = grades[i];
    if (graded) base.push(g ? gradeLabel(g) : '-');
    if (cells) base.push(r.cell ? coordsText(r.cell.coords) : '-');
    if (wide) {
      base.push(
        // a run reached into by berth exec, berth cp or the API: its result is not a clean run's
        r.touched ? touchedText(r.touched) : '-',
        r.image || '-',
        // the id the run's container was made from, short (as docker images shows ids)
        r.status?.image ? `${r.status.image.id.replace(/^sha256:/, '').slice(0, 12)}${r.status.image.pinned ? ' (pinned)' : ''}` : '-',
        Object.entries(r.labels)
          .map(([k, v]) => `${k}=${v}`)
          .join(',') || '-',
        r.results || '-',
      );
      if (graded) base.push(g ? graderImage(g) : '-');
    }
    return base;
  });
  return { head, body, graded };
}

export interface SetRow {
  name: string;
  valid: boolean;
  children: number;
  phases: Record<string, number>;
  /** Children by how they count (passed, failed, infra, skipped, unfinished), as summary counts them. */
  outcomes: Record<Classified['outcome'], number>;
  source: string;
  /** Its file is broken (or its fromDir missing): the row is its last good expansion's (spec/last-good.ts), held by these errors. */
  held?: SpecError[];
}

/** One row per AttemptSet: its children (those matching the selector) counted by phase; no record yet counts as Pending. */
export async function collectSetRows(ctx: Context, name?: string, selector: readonly string[] = []): Promise<SetRow[]> {
  const want = selectorOf(selector);
  const [load, statuses] = await Promise.all([loadView(ctx), ctx.store().loadAll()]);
  const specs = new Map(load.specs.map((s) => [s.spec.name, s]));
  const rows: SetRow[] = [];
  for (const [setName, set] of [...(load.sets ?? new Map())].sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (name && setName !== name) continue;
    const phases: Record<string, number> = Object.fromEntries(PHASES.map((p) => [p, 0]));
    const outcomes: SetRow['outcomes'] = { passed: 0, failed: 0, infra: 0, skipped: 0, unfinished: 0 };
    let children = 0;
    for (const c of set.children) {
      const labels = specs.get(c)?.spec.labels;
      if (want.length && !(labels && matches(want, labels))) continue;
      children++;
      const phase = statuses.get(c)?.phase ?? 'Pending';
      phases[phase] = (phases[phase] ?? 0) + 1;
      outcomes[outcomeOf(watched(c, specs.get(c), statuses.get(c))).outcome]++;
    }
    if (want.length && children === 0) continue;
    rows.push({
      name: setName,
      valid: set.valid,
      children,
      phases,
      outcomes,
      source: `${set.policy.source.file}:${set.policy.source.line}`,
      ...(set.held ? { held: set.held } : {}),
    });
  }
  return rows;
}

/**
 * The outcome columns of `get --sets`: how the children's runs count (summary's classes). Their
 * phases (a run that Succeeded may have failed its score) are one column of `-o wide`, `PHASES`,
 * so no two columns share a name and no phase count reads as a result.
 */
const SET_OUTCOMES = ['passed', 'failed', 'infra', 'skipped', 'unfinished'] as const;

function renderSetRows(rows: SetRow[], wide: boolean, headers: boolean): string {
  const head = ['NAME', 'CHILDREN', ...SET_OUTCOMES.map((o) => o.toUpperCase()), ...(wide ? ['PHASES'] : []), 'SOURCE'];
  const body = rows.map((r) => [
    r.valid ? r.name : `${r.name} (invalid)`,
    String(r.children),
    ...SET_OUTCOMES.map((o) => String(r.outcomes[o])),
    ...(wide
      ? [
          PHASES.filter((p) => (r.phases[p] ?? 0) > 0)
            .map((p) => `${r.phases[p]} ${p}`)
            .join(', ') || '-',
        ]
      : []),
    r.source,
  ]);
  return table(headers ? [head, ...body] : body);
}

async function runGetSets(ctx: Context, name: string | undefined, o: GetOptions): Promise<number> {
  const rows = await collectSetRows(ctx, name, o.selector ?? []).then((all) =>
    o.sortBy === undefined
      ? all
      : sortByPath(
          all,
          usage(() => parsePath((o.sortBy as string).replace(/^\{(.*)\}$/, '$1'))),
          toSetItem,
        ),
  );
  if (name && rows.length === 0) {
    ctx.io.err(`berth: AttemptSet ${JSON.stringify(name)} not found\n`);
    return EXIT.failed;
  }
  const doc = name ? toSetItem(rows[0] as SetRow) : toSetList(rows);
  if (o.output === 'json') ctx.io.out(JSON.stringify(doc, null, 2) + '\n');
  else if (o.output === 'yaml') ctx.io.out(yamlOf(doc));
  else if (o.output === 'name') ctx.io.out(rows.map((r) => `attemptset/${r.name}\n`).join(''));
  else if (o.output?.startsWith('jsonpath=')) ctx.io.out(jsonpathText(o.output.slice('jsonpath='.length), doc));
  else if (o.output?.startsWith('custom-columns='))
    ctx.io.out(customColumns(o.output.slice('custom-columns='.length), rows.map(toSetItem), o.headers !== false));
  else if (rows.length === 0) ctx.io.out('No AttemptSets.\n');
  else ctx.io.out(renderSetRows(rows, o.output === 'wide', o.headers !== false));
  // what a table cannot say (on stderr): sets held at their last good expansion, with the error that holds each
  const held = rows.filter((r) => r.held);
  if (held.length) {
    diag(
      ctx,
      'warn',
      `${plural(held.length, 'AttemptSet')} ${held.length === 1 ? 'keeps its' : 'keep their'} last good spec: ${held.length === 1 ? 'its file is' : 'their files are'} broken; the counts are of that spec's children, whose runs go on under it, and nothing new starts until it is fixed (berth validate shows every error)`,
    );
    for (const r of held) {
      const first = r.held?.[0];
      ctx.io.err(`  ${r.name}: ${first ? formatIssue(first) : 'its spec is broken'}\n`);
    }
  }
  return EXIT.ok;
}

/** A list with kubectl's ListMeta (continue, remainingItemCount) before its items, when a page left some out. */
function withMetadata<L extends { apiVersion: string; kind: string; items: unknown[] }>(
  list: L,
  next: { continue: string; remainingItemCount: number } | undefined,
): L {
  return next ? ({ apiVersion: list.apiVersion, kind: list.kind, metadata: next, items: list.items } as unknown as L) : list;
}

/** A path or template that cannot be read is a usage error (exit 2), pointing at the column. */
function usage<T>(f: () => T): T {
  try {
    return f();
  } catch (err) {
    if (err instanceof JsonPathError) throw new UsageError(err.message);
    throw err;
  }
}

/** `--sort-by`: rows ordered by the value the path reaches in each one's item (`.status.startedAt`, `{.metadata.name}`). */
export function sortedRows(rows: Row[], sortBy: string | undefined): Row[] {
  if (sortBy === undefined) return rows;
  const path = usage(() => parsePath(sortBy.replace(/^\{(.*)\}$/, '$1')));
  return sortByPath(rows, path, toItem);
}

function jsonpathText(template: string, doc: unknown): string {
  return usage(() => renderTemplate(parseTemplate(template), doc));
}

function customColumns(spec: string, items: unknown[], headers: boolean): string {
  const cols = usage(() => parseCustomColumns(spec));
  const body = items.map((item) => cols.map((c) => cellText(c.path, item)));
  return table(headers ? [cols.map((c) => c.header), ...body] : body);
}

export async function runGet(ctx: Context, names: string[], o: GetOptions): Promise<number> {
  if ((o.limit !== undefined || o.continue !== undefined) && (o.sets || o.watch))
    throw new UsageError(`${o.limit !== undefined ? '--limit' : '--continue'} pages a listing of attempts: not with ${o.sets ? '--sets' : '-w'}`);
  if (o.sets) return runGetSets(ctx, names[0], o);
  if (o.watch && /^(jsonpath|custom-columns)=/.test(o.output ?? ''))
    throw new UsageError('-w prints rows as they change: with -o wide, json, yaml or name, not jsonpath or custom-columns');
  if (o.watch) return (require('./get-watch') as typeof GetWatch).watchRows(ctx, names, o, o.signal);
  const view = await collectView(ctx, names, o.selector ?? []);
  const { load } = view;
  const all = sortedRows(view.rows, o.sortBy);
  // kubectl: what was found is printed, and every name that was not is an error (exit 1).
  const found = new Set(all.map((r) => r.name));
  const missing = [...new Set(names)].filter((n) => !found.has(n));
  for (const n of missing) ctx.io.err(`berth: attempt ${JSON.stringify(n)} not found\n`);
  const code = missing.length ? EXIT.failed : EXIT.ok;
  if (missing.length && all.length === 0) return code;
  const page = pageOf(all, o);
  const rows = page.rows;
  // One name asked for gives the item itself, as `kubectl get pod x -o json` does; built only for the outputs that show it.
  const doc = () => (names.length === 1 && rows[0] && !page.next ? toItem(rows[0]) : withMetadata(toList(rows), page.next));
  if (o.output === 'json') ctx.io.out(JSON.stringify(doc(), null, 2) + '\n');
  else if (o.output === 'yaml') ctx.io.out(yamlOf(doc()));
  else if (o.output === 'name') ctx.io.out(rows.map((r) => `attempt/${r.name}\n`).join(''));
  else if (o.output?.startsWith('jsonpath=')) ctx.io.out(jsonpathText(o.output.slice('jsonpath='.length), doc()));
  else if (o.output?.startsWith('custom-columns=')) ctx.io.out(customColumns(o.output.slice('custom-columns='.length), rows.map(toItem), o.headers !== false));
  else if (rows.length > 0) ctx.io.out(renderRows(rows, o.output === 'wide', o.headers !== false));
  // what a table cannot say (on stderr): spec errors holding attempts, an empty ("No attempts") or suspicious answer
  const table = o.output === undefined || o.output === 'text' || o.output === 'wide';
  // the rest, for a person (a script reads .metadata.continue)
  if (page.next && (table || o.output === 'name'))
    ctx.io.err(
      `berth: ${rows.length} of ${rows.length + page.next.remainingItemCount + page.before} attempts shown; the next ${Math.min(o.limit ?? 0, page.next.remainingItemCount)}: --continue ${page.next.continue}\n`,
    );
  await (require('./get-notes') as typeof GetNotes).printNotes(ctx, rows, load, { names, selector: o.selector ?? [], table });
  return code;
}
