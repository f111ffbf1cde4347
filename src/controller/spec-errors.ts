/**
 * The controller's word on spec errors: each error is logged once, at warn, with its
 * file:line:col, when a load first shows it (at start, or when a file that was valid breaks
 * while the controller runs); a resync that finds it unchanged says nothing, a change to it
 * (another line, another message) is a new error and logged again, and a file whose errors are
 * all gone is logged once at info. What runs under a broken spec keeps its last good spec: the
 * planner leaves it as it is (protected names, unreadable files). `current()` is what /readyz lists.
 */
import { brokenFiles } from '../spec/held';
import { formatIssue } from '../spec/issue';
import type { SpecError } from '../spec/types';
import type { Logger } from '../util/log';

/** At most this many errors are logged one by one per load; the rest are counted. */
const LOGGED_MAX = 20;

function keyOf(e: SpecError): string {
  return `${e.file}\0${e.line}\0${e.col}\0${e.path}\0${e.code}\0${e.message}`;
}

export class SpecErrorLog {
  private seen = new Set<string>();
  private files = new Set<string>();
  private errors: readonly SpecError[] = [];

  constructor(private readonly log: Logger) {}

  /** A load's errors: the new ones are logged, the files fixed since the last load too. */
  update(errors: readonly SpecError[]): void {
    const now = new Set(errors.map(keyOf));
    const fresh = errors.filter((e) => !this.seen.has(keyOf(e)));
    for (const e of fresh.slice(0, LOGGED_MAX)) {
      const who = e.attempt !== undefined ? `attempt/${e.attempt}` : e.set !== undefined ? `set/${e.set}` : 'what its file declared';
      this.log.warn(
        `spec error: ${formatIssue(e)} (${who}: nothing new is started for it, and what already runs keeps its last good spec until the file is fixed)`,
      );
    }
    if (fresh.length > LOGGED_MAX) this.log.warn(`and ${fresh.length - LOGGED_MAX} more spec errors (berth validate shows them all)`);
    const files = new Set(errors.map((e) => e.file));
    for (const f of [...this.files].sort()) if (!files.has(f)) this.log.info(`spec errors fixed: ${f}`);
    this.seen = now;
    this.files = files;
    this.errors = errors;
  }

  /** The errors of the last load. */
  current(): readonly SpecError[] {
    return this.errors;
  }

  /** Each broken file once, with its first error (for /readyz). */
  brokenFiles(): SpecError[] {
    return brokenFiles(this.errors);
  }
}
