/**
 * Is a parsed status record a record? The planner and executor trust the fields they read
 * (phase, run, hashes, times), so a file that parses but holds something else (another shape,
 * another attempt's or instance's record) is as damaged as one that does not parse. Problems
 * are told in words that never quote the file's content.
 */
import { PHASES, SCHEMA_VERSIONS } from '../constants';

const PHASE_SET: ReadonlySet<string> = new Set(PHASES);

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const isCount = (v: unknown): boolean => typeof v === 'number' && Number.isInteger(v) && v >= 0;
const isTime = (v: unknown): boolean => typeof v === 'string' && !Number.isNaN(Date.parse(v));

const REQUIRED_TIMES = ['createdAt', 'updatedAt'] as const;
const OPTIONAL_TIMES = ['eligibleAt', 'provisionedAt', 'startedAt', 'finishedAt', 'deadlineAt', 'collectedAt'] as const;
const OPTIONAL_STRINGS = ['reason', 'message', 'source', 'containerId', 'resultsDir'] as const;

const GRADE_STATES: ReadonlySet<unknown> = new Set(['grading', 'graded', 'failed', 'timedOut']);

/** A grade record as the planner reads it: its number, run, hash, state and results folder. */
function isGrade(g: unknown): boolean {
  return (
    isObj(g) &&
    isCount(g.k) &&
    isCount(g.run) &&
    typeof g.gradeHash === 'string' &&
    GRADE_STATES.has(g.state) &&
    typeof g.resultsDir === 'string' &&
    isTime(g.createdAt) &&
    (g.deadlineAt === undefined || isTime(g.deadlineAt)) &&
    (g.containerId === undefined || typeof g.containerId === 'string')
  );
}

/**
 * What is wrong with `v` as the status record of attempt `name` of `instance`, or undefined
 * when nothing is.
 */
export function recordProblem(v: unknown, name: string, instance: string): string | undefined {
  if (!isObj(v)) return 'not a status record (not a JSON object)';
  if (v.schemaVersion !== undefined && !isCount(v.schemaVersion)) return 'field schemaVersion is not a whole number';
  if (v.name !== name) return 'its name field does not match the file name';
  if (v.instance !== instance) return `its instance field does not name instance ${instance}`;
  if (typeof v.phase !== 'string' || !PHASE_SET.has(v.phase)) return 'field phase is missing or not a known phase';
  if (typeof v.specHash !== 'string') return 'field specHash is missing or not a string';
  if (!isCount(v.run)) return 'field run is missing or not a whole number';
  if (!isCount(v.retriesUsed)) return 'field retriesUsed is missing or not a whole number';
  for (const k of REQUIRED_TIMES) if (!isTime(v[k])) return `field ${k} is missing or not a time`;
  for (const k of OPTIONAL_TIMES) if (v[k] !== undefined && !isTime(v[k])) return `field ${k} is not a time`;
  for (const k of OPTIONAL_STRINGS) if (v[k] !== undefined && typeof v[k] !== 'string') return `field ${k} is not a string`;
  if (v.exitCode !== undefined && (typeof v.exitCode !== 'number' || !Number.isInteger(v.exitCode))) return 'field exitCode is not a whole number';
  // what pass rates are judged on (sets/outcome.ts)
  if (v.score !== undefined && (typeof v.score !== 'number' || !Number.isFinite(v.score))) return 'field score is not a number';
  if (v.scorePass !== undefined && typeof v.scorePass !== 'boolean') return 'field scorePass is not true or false';
  if (v.intent !== undefined && !(isObj(v.intent) && isCount(v.intent.run) && typeof v.intent.specHash === 'string'))
    return 'field intent is not a provisioning intent';
  if (v.rerunRequested !== undefined && !(isObj(v.rerunRequested) && isTime(v.rerunRequested.at) && isCount(v.rerunRequested.run)))
    return 'field rerunRequested is not a rerun request';
  if (v.deleted !== undefined && !(isObj(v.deleted) && isTime(v.deleted.at) && typeof v.deleted.specHash === 'string'))
    return 'field deleted is not a deletion mark';
  if (
    v.ended !== undefined &&
    !(isObj(v.ended) && isCount(v.ended.run) && typeof v.ended.phase === 'string' && PHASE_SET.has(v.ended.phase) && typeof v.ended.reason === 'string')
  ) {
    return 'field ended is not a run outcome';
  }
  if (v.warnings !== undefined && !(Array.isArray(v.warnings) && v.warnings.every((w) => typeof w === 'string')))
    return 'field warnings is not a list of strings';
  const att = v.lastAttestation;
  if (
    att !== undefined &&
    !(isObj(att) && isTime(att.at) && (att.depth === 'list' || att.depth === 'inspect') && Array.isArray(att.checks) && att.checks.every(isObj))
  ) {
    return 'field lastAttestation is not an attestation';
  }
  const le = v.lastError;
  if (le !== undefined && !(isObj(le) && isTime(le.at) && typeof le.message === 'string' && isCount(le.failures) && isTime(le.nextRetryAt)))
    return 'field lastError is not an error record';
  if (v.grades !== undefined && !(Array.isArray(v.grades) && v.grades.every(isGrade))) return 'field grades holds an entry that is not a grade';
  const rr = v.regradeRequested;
  if (rr !== undefined && !(isObj(rr) && isTime(rr.at) && isCount(rr.run) && isCount(rr.after))) return 'field regradeRequested is not a regrade request';
  if (!Array.isArray(v.history)) return 'field history is missing or not a list';
  if (!v.history.every((h) => isObj(h) && isCount(h.run) && typeof h.phase === 'string' && PHASE_SET.has(h.phase)))
    return 'field history holds an entry that is not a run record';
  return undefined;
}

/**
 * A record written by a newer berth (its `schemaVersion` above SCHEMA_VERSIONS.statusRecord): not
 * damage, and not to be read or overwritten by this one, which would lose what it does not know.
 * The command stops, saying which berth it needs.
 */
export class NewerRecordError extends Error {
  readonly code = 'StatusRecordTooNew';
  constructor(
    readonly file: string,
    readonly version: number,
    readonly supported: number,
  ) {
    super(
      `${file}: this status record was written by a newer berth (schema version ${version}; this berth reads up to ${supported}): use that berth or a newer one on this state folder; nothing was read or changed`,
    );
    this.name = 'NewerRecordError';
  }
}

/** Throws NewerRecordError when `v` says it was written under a newer schema than this berth reads. */
export function refuseNewer(v: unknown, file: string): void {
  const version = isObj(v) ? v.schemaVersion : undefined;
  if (typeof version === 'number' && version > SCHEMA_VERSIONS.statusRecord) throw new NewerRecordError(file, version, SCHEMA_VERSIONS.statusRecord);
}

/**
 * A parsed record as this berth reads it: an older one upgraded (version 1, before records carried
 * a version, needs nothing but the version), a newer one refused (NewerRecordError).
 */
export function upgradeRecord<T extends Obj>(v: T, file: string): T & { schemaVersion: number } {
  refuseNewer(v, file);
  return v.schemaVersion === SCHEMA_VERSIONS.statusRecord ? (v as T & { schemaVersion: number }) : { ...v, schemaVersion: SCHEMA_VERSIONS.statusRecord };
}
