/** Helpers shared by commands. */
import { promises as fs } from 'node:fs';
import { formatErrors, githubAnnotations, inGithubActions } from '../format-errors';
import type { LoadResult } from '../../spec/types';
import { specsRootProblem } from '../../spec/walk';
import { displayPath } from '../../spec/path-util';
import type { Context } from '../context';
import { sourceLineReader } from './validate';

/** Spec errors on stderr, compiler style, with the source line and a caret. */
export function reportLoadErrors(ctx: Context, load: LoadResult): void {
  if (!load.errors.length) return;
  ctx.io.err(formatErrors(load.errors, sourceLineReader()));
  if (inGithubActions(ctx.env)) ctx.io.err(githubAnnotations(load.errors, { cwd: process.cwd(), workspace: ctx.env.GITHUB_WORKSPACE }));
  ctx.io.err(`${load.errors.length} spec error${load.errors.length === 1 ? '' : 's'}; attempts under invalid specs are left as they are\n`);
}

/**
 * A specs root that is missing, not a folder or unreadable stops a command that plans before it
 * plans or touches the engine (CONTRACT: exit 2): such a folder knows no attempt, and planning
 * from it would remove every attempt of the instance. Returns the message, or undefined.
 */
export function specsRootError(ctx: Context): string | undefined {
  const problem = specsRootProblem(ctx.specsDir);
  return problem ? `berth: ${displayPath(ctx.specsDir)}: ${problem} (--specs); nothing was planned or changed\n` : undefined;
}

export async function exists(p: string): Promise<boolean> {
  return fs.access(p).then(
    () => true,
    () => false,
  );
}

export function age(fromIso: string | undefined, now: number): string {
  if (!fromIso) return '-';
  return duration(now - Date.parse(fromIso));
}

export function duration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '-';
  // Rounded, as kubectl rounds: a run of 1.99 s is 2s, not 1s.
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${s % 60 ? `${s % 60}s` : ''}`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h${m % 60 ? `${m % 60}m` : ''}`;
  return `${Math.floor(h / 24)}d`;
}

export function table(rows: string[][]): string {
  const widths: number[] = [];
  for (const r of rows) r.forEach((c, i) => (widths[i] = Math.max(widths[i] ?? 0, c.length)));
  return (
    rows
      .map((r) =>
        r
          .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
          .join('   ')
          .trimEnd(),
      )
      .join('\n') + '\n'
  );
}

/**
 * A source that declares no attempt for an instance that has never had one (plan.emptySource
 * 'empty'): what a wrong `--specs` or `BERTH_SPECS` looks like, so `reconcile --once` and `plan`
 * refuse it (exit 2) unless `--allow-empty` (Argo CD's allowEmpty).
 */
export function emptySourceMessage(instance: string, where: string): string {
  return `berth: ${where} declares no attempts (no Attempt or AttemptSet in its spec files) and instance "${instance}" has none: nothing to reconcile. A wrong --specs (or BERTH_SPECS, --git-path) looks like this; --allow-empty accepts an empty source\n`;
}

/**
 * A table printed a batch at a time (`get -w`, `events -w`): each column keeps the width it has
 * had so far, so later rows line up under the header printed with the first batch (a cell wider
 * than any before widens its column from then on).
 */
export class StickyTable {
  private widths: number[];

  /** `min`: the widths the columns start from (a phase, a reason), so the usual values fit from the first batch on. */
  constructor(min: readonly number[] = []) {
    this.widths = [...min];
  }

  render(rows: string[][]): string {
    for (const r of rows) r.forEach((c, i) => (this.widths[i] = Math.max(this.widths[i] ?? 0, c.length)));
    return rows
      .map(
        (r) =>
          r
            .map((c, i) => (i === r.length - 1 ? c : c.padEnd(this.widths[i] ?? 0)))
            .join('   ')
            .trimEnd() + '\n',
      )
      .join('');
  }
}
