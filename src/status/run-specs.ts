/**
 * The spec each attempt's current run was made from, kept so that `plan` can say which fields a
 * replacing spec changes: `<state>/<instance>/run-specs/<name>.json`, written when a run begins
 * (the begin-run operation, beside its record), removed with the record. It holds the spec's
 * hashed form with secrets by name (spec/spec-diff.ts `diffForm`: never a secret's value, nor the
 * variable or file it comes from), at most MAX_BYTES (a larger one is kept as its hash alone).
 * Written atomically (temp, rename) but not synced: it is a convenience of `plan`, and one lost in a
 * crash, left from an earlier run (another spec hash) or that cannot be read counts as none (the
 * plan says it cannot tell). A run's start costs no second fsync for it.
 */
import { promises as fsp, readFileSync } from 'node:fs';
import path from 'node:path';
import { tempPathFor } from './atomic-file';

/** The most a kept spec may take on disk. */
export const RUN_SPEC_MAX_BYTES = 64 * 1024;
export const RUN_SPECS_DIR = 'run-specs';

export interface RunSpec {
  schemaVersion: 1;
  /** The spec hash of the run it was made for. */
  specHash: string;
  /** Its form (absent: it was larger than RUN_SPEC_MAX_BYTES). */
  spec?: Record<string, unknown>;
}

export class RunSpecs {
  readonly dir: string;

  constructor(stateDir: string, instance: string) {
    this.dir = path.join(path.resolve(stateDir), instance, RUN_SPECS_DIR);
  }

  private file(name: string): string {
    return path.join(this.dir, `${name}.json`);
  }

  async put(name: string, specHash: string, spec: Record<string, unknown>): Promise<void> {
    const whole = JSON.stringify({ schemaVersion: 1, specHash, spec } satisfies RunSpec);
    const text = whole.length <= RUN_SPEC_MAX_BYTES ? whole : JSON.stringify({ schemaVersion: 1, specHash } satisfies RunSpec);
    await fsp.mkdir(this.dir, { recursive: true });
    const temp = tempPathFor(this.file(name));
    try {
      await fsp.writeFile(temp, `${text}\n`, { flag: 'wx' });
      await fsp.rename(temp, this.file(name));
    } catch (err) {
      await fsp.rm(temp, { force: true });
      throw err;
    }
  }

  /** The kept spec of `name`'s run, or undefined (none, another version, unreadable). */
  get(name: string): RunSpec | undefined {
    try {
      const v = JSON.parse(readFileSync(this.file(name), 'utf8')) as Partial<RunSpec>;
      if (v.schemaVersion !== 1 || typeof v.specHash !== 'string') return undefined;
      return v as RunSpec;
    } catch {
      return undefined;
    }
  }

  async remove(name: string): Promise<void> {
    await fsp.rm(this.file(name), { force: true });
  }
}
