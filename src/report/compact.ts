/**
 * The attempts of a large report as compact columns (issue 55): above REPORT_LIMITS.detailed
 * attempts the page does not draw a row per attempt in its HTML (100,000 rows, and their
 * timeline rows, would be tens of MB and seconds of layout); it holds them as columns, each
 * repeated value (phase, reason, message, axis value, labels, image) once in a table of its own,
 * and its script draws the table a page at a time. About 75 bytes an attempt.
 *
 * Links: a run folder relative to the report (`<results>/<name>/run-<n>`, as linksOf makes them)
 * is kept as 1 when it is `<name>/run-<run>` (most are), else as its text; the patch's and the
 * grade log's links, rare, by attempt.
 */
import type { ReportAttempt, ReportData } from './model';

export interface CompactTable {
  n: number;
  /** Tables of the values the columns below point into. */
  dict: {
    set: string[];
    axes: string[][];
    value: string[];
    phase: string[];
    reason: string[];
    message: string[];
    outcome: string[];
    grade: string[];
    labels: Record<string, string>[];
    image: ({ id: string; ref: string; repoDigests: string[]; pinned: boolean } | null)[];
    folder: string[];
  };
  /** Each name less its set's name and the `-` after it (a set's children all start so); a name that does not is written whole after a `!`. */
  name: string[];
  /** Into dict.set (-1: a plain attempt); its axes are dict.axes at the same index. */
  set: number[] | string;
  /** Into dict.value, one per axis of the attempt's set. */
  coords: number[][];
  phase: number[] | string;
  reason: number[] | string;
  message: number[] | string;
  outcome: number[] | string;
  exit: (number | null)[];
  score: (number | null)[];
  grade: number[] | string;
  /** ms. */
  duration: (number | null)[];
  run: number[] | string;
  image: number[] | string;
  labels: number[] | string;
  /**
   * Tenths of a second: waiting from (after `base`, the report's window start), then provisioning
   * after that, then the start after that (null: not reached); the finish is the start plus the
   * duration.
   */
  times: (number | null)[][];
  base: number;
  /** The run folder's link: -1 none; else into dict.folder, the folder it is in (the link is that, the name and `/run-<run>`); a string: the link itself. */
  link: (number | string)[] | string;
  /** By attempt index: its patch and grade log links, when it has them. */
  extra: Record<number, { patch?: string; gradeLog?: string }>;
}

class Dict<T> {
  readonly list: T[] = [];
  private readonly at = new Map<string, number>();
  constructor(private readonly key: (v: T) => string = (v) => String(v)) {}
  of(v: T): number {
    const k = this.key(v);
    let i = this.at.get(k);
    if (i === undefined) {
      this.at.set(k, (i = this.list.length));
      this.list.push(v);
    }
    return i;
  }
}

const json = (v: unknown) => JSON.stringify(v);

/** The characters a small column is written in, one an attempt: the value + 1 (so -1 is the first). */
export const CODES = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_-';

/** A column of small numbers (-1 up to 62) as one string, a character each (a third of a JSON array's bytes); else as it is. */
function packed(xs: number[]): number[] | string {
  if (xs.some((x) => !Number.isInteger(x) || x < -1 || x >= CODES.length - 1)) return xs;
  let out = '';
  for (const x of xs) out += CODES[x + 1];
  return out;
}

/** The run folder a set of links is in (`<x>/run-<n>`, from its results link `<x>/run-<n>/results/`), as `link` keeps it. */
function runLink(a: ReportAttempt, folder: Dict<string>): number | string {
  if (!a.links) return -1;
  const run = a.links.results.replace(/\/results\/$/, '');
  const tail = `${encodeURI(a.name)}/run-${a.run}`;
  if (run === tail) return folder.of('');
  return run.endsWith(`/${tail}`) ? folder.of(run.slice(0, -tail.length)) : run;
}

export function compactTable(d: ReportData): CompactTable {
  const set = new Dict<string>();
  const axes: string[][] = [];
  const value = new Dict<string>();
  const phase = new Dict<string>();
  const reason = new Dict<string>();
  const message = new Dict<string>();
  const outcome = new Dict<string>();
  const grade = new Dict<string>();
  const labels = new Dict<Record<string, string>>(json);
  const image = new Dict<CompactTable['dict']['image'][number]>(json);
  const folder = new Dict<string>();
  const base = d.summary.window?.from ?? 0;
  const t: CompactTable = {
    n: d.attempts.length,
    dict: {
      set: set.list,
      axes,
      value: value.list,
      phase: phase.list,
      reason: reason.list,
      message: message.list,
      outcome: outcome.list,
      grade: grade.list,
      labels: labels.list,
      image: image.list,
      folder: folder.list,
    },
    name: [],
    set: [],
    coords: [],
    phase: [],
    reason: [],
    message: [],
    outcome: [],
    exit: [],
    score: [],
    grade: [],
    duration: [],
    run: [],
    image: [],
    labels: [],
    times: [],
    base,
    link: [],
    extra: {},
  };
  const ds = (x: number | null, from: number | null) => (x === null || from === null ? null : Math.round((x - from) / 100));
  d.attempts.forEach((a, i) => {
    let s = -1;
    if (a.set !== null) {
      s = set.of(a.set);
      axes[s] ??= Object.keys(a.coords);
    }
    t.name.push(a.set !== null && a.name.startsWith(`${a.set}-`) ? a.name.slice(a.set.length + 1) : `!${a.name}`);
    (t.set as number[]).push(s);
    const keys = s >= 0 ? (axes[s] as string[]) : [];
    // a child whose axes are not its set's first child's (never, for a set): its own, as text
    t.coords.push(keys.length === Object.keys(a.coords).length && keys.every((k) => k in a.coords) ? keys.map((k) => value.of(a.coords[k] as string)) : []);
    (t.phase as number[]).push(phase.of(a.phase));
    (t.reason as number[]).push(reason.of(a.reason));
    (t.message as number[]).push(message.of(a.message));
    (t.outcome as number[]).push(outcome.of(a.outcome));
    t.exit.push(a.exitCode);
    t.score.push(a.score);
    (t.grade as number[]).push(a.grade === null ? -1 : grade.of(a.grade));
    t.duration.push(a.durationMs);
    (t.run as number[]).push(a.run);
    (t.image as number[]).push(image.of(a.image && a.imageId !== null ? { id: a.imageId, ...a.image } : null));
    (t.labels as number[]).push(labels.of(a.labels));
    // each from the one before it that is there (the page reads them back the same way)
    const q = a.queuedAt;
    t.times.push([ds(q, base), ds(a.provisionedAt, q ?? base), ds(a.startedAt, a.provisionedAt ?? q ?? base)]);
    (t.link as (number | string)[]).push(runLink(a, folder));
    if (a.links?.patch || a.links?.gradeLog)
      t.extra[i] = { ...(a.links.patch ? { patch: a.links.patch } : {}), ...(a.links.gradeLog ? { gradeLog: a.links.gradeLog } : {}) };
  });
  for (const k of ['set', 'phase', 'reason', 'message', 'outcome', 'grade', 'run', 'image', 'labels'] as const) t[k] = packed(t[k] as number[]);
  if ((t.link as (number | string)[]).every((l) => typeof l === 'number')) t.link = packed(t.link as number[]);
  return t;
}
