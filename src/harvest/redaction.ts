/**
 * A run's redaction (docs/CONTRACT.md, berth's section): the values of every secret the run was
 * given (the main container's, its sidecars', the proxy's) are read again, when its harvest or
 * its grade is done, from the sources recorded when the run began (`secretSources`: the harvest
 * may run in another berth process, after a restart, with the spec changed or gone since), and
 * replaced by `[redacted:<name>]` in everything berth writes for the run (util/redact.ts).
 *
 * A value that cannot be read again (its variable unset, its file gone) cannot be redacted: the
 * run is marked `redaction.complete: false` with which and why, and a warning says so, never a
 * silent skip. Neither do values shorter than DEFAULTS.redactMinBytes or longer than
 * DEFAULTS.redactMaxBytes get redacted (the same mark). A value that changed at its source since
 * the run began is not known to be stale: the new one is redacted (said in the docs). Values live
 * in memory only, for the operation.
 */
import { DEFAULTS } from '../constants';
import type { SecretRef } from '../spec/types';
import type { AttemptStatus, Redaction } from '../status/types';
import { Redactor, type SecretValue } from '../util/redact';
import { readSecret } from '../pack/secrets';

export interface RunRedaction {
  redactor: Redactor;
  /** For the record; undefined when the run has no secrets (or none known: a run begun before berth recorded them). */
  redaction?: Redaction;
  /** What could not be redacted and why, for the record's warnings. */
  warnings: string[];
}

/** Where a run's secrets come from, as recorded when it began (only names and sources). */
export function secretSourcesOf(secrets: readonly SecretRef[]): AttemptStatus['secretSources'] {
  return secrets.map((s) => ({
    name: s.name,
    ...(s.fromEnv !== undefined ? { fromEnv: s.fromEnv } : {}),
    ...(s.fromFile !== undefined ? { fromFile: s.fromFile } : {}),
  }));
}

/** The redaction of the run whose secrets come from `sources`, their values read again from `env` and the files. */
export async function runRedaction(sources: readonly SecretRef[] | undefined, env: NodeJS.ProcessEnv): Promise<RunRedaction> {
  if (!sources?.length) return { redactor: new Redactor([], DEFAULTS.redactMinBytes), warnings: [] };
  const values: SecretValue[] = [];
  const notRedacted: NonNullable<Redaction['notRedacted']> = [];
  const warnings: string[] = [];
  for (const s of sources) {
    try {
      const value = await readSecret(s, env);
      if (value) values.push({ name: s.name, value });
    } catch (err) {
      notRedacted.push({ name: s.name, why: 'unreadable' });
      // the error names the secret and its source, never a value (secrets.ts)
      warnings.push(`${err instanceof Error ? err.message : String(err)} at the harvest: its value is not redacted from what berth wrote for this run`);
    }
  }
  const redactor = new Redactor(values, DEFAULTS.redactMinBytes, DEFAULTS.redactMaxBytes);
  for (const name of redactor.tooShort) {
    notRedacted.push({ name, why: 'too-short' });
    warnings.push(
      `secret ${name}: its value is shorter than ${DEFAULTS.redactMinBytes} bytes, too short to redact: it is not redacted from what berth wrote for this run`,
    );
  }
  for (const name of redactor.tooLong) {
    notRedacted.push({ name, why: 'too-long' });
    warnings.push(
      `secret ${name}: its value is longer than ${DEFAULTS.redactMaxBytes} bytes, too long to redact: it is not redacted from what berth wrote for this run`,
    );
  }
  const secrets = redactor.secretNames;
  const redaction: Redaction = { complete: notRedacted.length === 0, secrets, ...(notRedacted.length ? { notRedacted } : {}) };
  return { redactor, redaction, warnings };
}

/** The record's sources, else the spec's when the run is of that very spec (a run begun before berth recorded them). */
export function sourcesFor(rec: AttemptStatus, spec?: { hash: string; secrets: readonly SecretRef[] }): readonly SecretRef[] | undefined {
  if (rec.secretSources) return rec.secretSources;
  return spec && spec.hash === rec.specHash ? spec.secrets : undefined;
}

/** `rec` with the redaction's mark and warnings (each once), every string in it redacted. */
export function redactRecord<T extends AttemptStatus>(rec: T, rr: RunRedaction): T {
  const warnings = [...(rec.warnings ?? [])];
  for (const w of rr.warnings) if (!warnings.includes(w)) warnings.push(w);
  const marked = { ...rec, ...(rr.redaction ? { redaction: rr.redaction } : {}), ...(warnings.length ? { warnings } : {}) };
  return rr.redactor.redactJson(marked);
}
