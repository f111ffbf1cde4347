/**
 * The `-o json|yaml` shape of an attempt, kubectl's: `apiVersion`, `kind`, `metadata` (name,
 * labels), a `spec` summary and `status`; no field appears both at the top and in `status`. A
 * list is `{apiVersion, kind: List, items}`. schemas/get-output.schema.json describes both.
 * An AttemptSet (`get --sets`) likewise: schemas/get-sets-output.schema.json.
 */
import { API_VERSION, DEFAULTS, KIND_ATTEMPT, KIND_ATTEMPT_SET, SCHEMA_VERSIONS } from '../../constants';
import type { Row, SetRow } from './get';

export interface AttemptItem {
  /** SCHEMA_VERSIONS.get: this output's own shape (the record's version is not shown). */
  schemaVersion: number;
  apiVersion: string;
  kind: typeof KIND_ATTEMPT;
  /** `set`: an AttemptSet's child, its set and coordinates. */
  metadata: { name: string; labels: Record<string, string>; set?: { name: string; coords: Record<string, string> } };
  /** The normalized spec (defaults filled in, paths resolved; its name and labels are in metadata); absent when the attempt has no valid spec (any more). */
  spec?: { image: string; command?: string[] } & Record<string, unknown>;
  status: Record<string, unknown> & { phase: string };
}

/**
 * The normalized spec as `-o yaml|json` shows it: image and command first (no command: the image's), then the rest,
 * the pull policies where the user writes them (`imagePullPolicy` at the top, in `grade` and in each sidecar), defaults filled in.
 */
function specOf(r: Row): NonNullable<AttemptItem['spec']> {
  const head = { image: r.image, ...(r.command ? { command: r.command } : {}) };
  if (!r.spec) return head;
  const { apiVersion: _a, kind: _k, name: _n, labels: _l, image: _i, command: _c, pullPolicies, sidecars, grade, ...rest } = r.spec;
  return {
    ...head,
    ...rest,
    imagePullPolicy: pullPolicies.main,
    sidecars: sidecars.map((c) => ({ ...c, imagePullPolicy: pullPolicies.sidecars[c.name] ?? DEFAULTS.imagePullPolicy })),
    grade: grade && { ...grade, imagePullPolicy: pullPolicies.grade },
  };
}

export function toItem(r: Row): AttemptItem {
  const { name: _name, schemaVersion: _v, ...recorded } = r.status ?? { phase: r.phase };
  const status: AttemptItem['status'] = r.status
    ? recorded
    : {
        phase: r.phase,
        reason: r.reason,
        ...(r.damaged
          ? { damagedRecord: { file: r.damaged.file, problem: r.damaged.problem, ...(r.damaged.keptAt ? { keptAt: r.damaged.keptAt } : {}) } }
          : {}),
      };
  // how the run counts, judged now (get's RESULT column), beside what the record says
  status.result = { outcome: r.outcome.outcome, ...(r.outcome.reason ? { reason: r.outcome.reason } : {}), ...(r.score !== null ? { score: r.score } : {}) };
  // while it runs, counted from its run folder (the record holds it once harvested)
  if (r.touched) status.touched = r.touched;
  return {
    schemaVersion: SCHEMA_VERSIONS.get,
    apiVersion: API_VERSION,
    kind: KIND_ATTEMPT,
    metadata: { name: r.name, labels: r.labels, ...(r.cell ? { set: { name: r.cell.set, coords: r.cell.coords } } : {}) },
    ...(r.image ? { spec: specOf(r) } : {}),
    status,
  };
}

export function toList(rows: Row[]): { schemaVersion: number; apiVersion: string; kind: 'List'; items: AttemptItem[] } {
  return { schemaVersion: SCHEMA_VERSIONS.get, apiVersion: API_VERSION, kind: 'List', items: rows.map(toItem) };
}

export interface AttemptSetItem {
  schemaVersion: number;
  apiVersion: string;
  kind: typeof KIND_ATTEMPT_SET;
  metadata: { name: string; source: string };
  status: {
    valid: boolean;
    children: number;
    phases: Record<string, number>;
    outcomes: SetRow['outcomes'];
    /** Its file is broken: the counts are its last good expansion's, held by these errors. */
    heldBy?: { file: string; line: number; col: number; path: string; message: string }[];
  };
}

export function toSetItem(r: SetRow): AttemptSetItem {
  return {
    schemaVersion: SCHEMA_VERSIONS.get,
    apiVersion: API_VERSION,
    kind: KIND_ATTEMPT_SET,
    metadata: { name: r.name, source: r.source },
    status: {
      valid: r.valid,
      children: r.children,
      phases: r.phases,
      outcomes: r.outcomes,
      ...(r.held ? { heldBy: r.held.map(({ file, line, col, path, message }) => ({ file, line, col, path, message })) } : {}),
    },
  };
}

export function toSetList(rows: SetRow[]): { schemaVersion: number; apiVersion: string; kind: 'List'; items: AttemptSetItem[] } {
  return { schemaVersion: SCHEMA_VERSIONS.get, apiVersion: API_VERSION, kind: 'List', items: rows.map(toSetItem) };
}
