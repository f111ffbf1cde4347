/**
 * The commands' side of an instance's source binding (src/status/source-binding.ts): which
 * source a command speaks for, and the check every writer makes right after it takes the
 * instance's locks. A writer from the bound source goes on; the first writer of an instance
 * with no binding (new, or made by a berth that kept none) binds it; a writer from another
 * source is refused (exit 2), its message naming both sources and the two ways out
 * (`--instance`, `--move-instance`), before anything of the instance is changed.
 * `--move-instance` rebinds the instance to the writer's source: its next pass then removes
 * what the old source ran, as any pass removes attempts whose specs are gone.
 */
import { promises as fs } from 'node:fs';
import type * as Os from 'node:os';
import path from 'node:path';
import type { Engine } from '../../engine/types';
import type { GitSource } from '../../git/source';
import type * as GitStatus from '../../git/status';
import { describeSource, readBinding, sameSource, writeBinding, type Binding, type InstanceSource } from '../../status/source-binding';
import type { Context } from '../context';
import { diag } from '../diag';

/** A specs folder as a source: its real path (links resolved), else its absolute path. */
export async function folderSource(dir: string): Promise<InstanceSource> {
  const abs = path.resolve(dir);
  return { kind: 'dir', path: await fs.realpath(abs).catch(() => abs) };
}

export function gitSourceOf(git: GitSource): InstanceSource {
  return { kind: 'git', url: git.cfg.url.display, path: git.cfg.path };
}

/**
 * The source `clean` speaks for: `--specs` when given; else the git source the state folder
 * follows for the instance (its `source.json`); else the default specs folder (`specs` in the
 * working directory), as `reconcile` would read.
 */
export async function cleanSource(ctx: Context, specsGiven: boolean): Promise<InstanceSource> {
  if (!specsGiven) {
    // the git modules load only where a git source is in play (a small one, here)
    const git = await (require('../../git/status') as typeof GitStatus).readSourceStatus(ctx.stateDir, ctx.instance);
    if (git?.url) return { kind: 'git', url: git.url, path: git.path ?? '' };
  }
  return folderSource(ctx.specsDir);
}

export type BindingVerdict = { ok: true; binding?: Binding; moved?: Binding } | { ok: false; binding: Binding };

/** Whether `source` may drive the instance (read only: `plan`). */
export async function judgeSource(engine: Engine, instance: string, source: InstanceSource): Promise<BindingVerdict> {
  const binding = await readBinding(engine, instance);
  if (!binding || sameSource(binding.source, source)) return { ok: true, ...(binding ? { binding } : {}) };
  return { ok: false, binding };
}

/** What a refusal says: both sources, what the command would have done, and the two ways out. */
export function refusalMessage(instance: string, binding: Binding, source: InstanceSource, command: 'reconcile' | 'clean' | 'plan'): string {
  const bound = describeSource(binding.source);
  const here = describeSource(source);
  const would =
    command === 'clean' ? `cleaning it from here would remove what ${bound} runs` : `reconciling it from here would stop and remove what ${bound} runs`;
  const move =
    command === 'clean' ? '--move-instance (clean it anyway)' : '--move-instance (bind it to this source; what the other source runs is then removed)';
  return (
    `berth: instance "${instance}" is bound to ${bound} (since ${binding.boundAt}${binding.hostname ? `, on host ${binding.hostname}` : ''}), not to ${here}: ${would}. ` +
    `Give this source an instance of its own (--instance NAME), or move the instance on purpose with ${move}; nothing was changed\n`
  );
}

/**
 * A writer's check, holding the instance's locks: true to go on (the instance is now bound to
 * `source`), false when refused (told on stderr; the caller exits 2 and changes nothing).
 */
export async function bindInstance(
  ctx: Context,
  engine: Engine,
  source: InstanceSource,
  o: { move?: boolean; command: 'reconcile' | 'clean' },
): Promise<boolean> {
  const verdict = await judgeSource(engine, ctx.instance, source);
  if (verdict.ok && verdict.binding) return true;
  if (!verdict.ok && !o.move) {
    ctx.io.err(refusalMessage(ctx.instance, verdict.binding, source, o.command));
    return false;
  }
  // clean forgets the binding once the instance is gone: nothing to write for it.
  if (o.command === 'clean') return true;
  // node:os loaded here, not at every start (issue 55)
  const { hostname } = require('node:os') as typeof Os;
  await writeBinding(engine, ctx.instance, source, { now: new Date(), hostname: hostname() });
  if (!verdict.ok)
    diag(ctx, 'warn', `instance "${ctx.instance}" moved from ${describeSource(verdict.binding.source)} to ${describeSource(source)} (--move-instance)`);
  else ctx.log.info(`instance "${ctx.instance}" bound to ${describeSource(source)}`);
  return true;
}
