/**
 * `berth source [-o json]`: the instance's git source as berth last saw it (docs/CONTRACT.md
 * "Specs from git"): URL (it never holds credentials), ref, path, the revision in force, when it
 * was fetched and first applied, that revision's spec errors, and whether it is stale (the last
 * fetch failed; the revision in force may be behind the remote). Reads the state folder only.
 * Exit 0; 1 when the instance has no git source; with `-o json` the record as kept.
 */
import { EXIT, SCHEMA_VERSIONS } from '../../constants';
import { readSourceStatus, statusPath } from '../../git/status';
import { formatIssue } from '../../spec/issue';
import type { Context } from '../context';
import { age } from './shared';

export async function runSource(ctx: Context, o: { output?: 'json' }): Promise<number> {
  const s = await readSourceStatus(ctx.stateDir, ctx.instance);
  if (!s) {
    ctx.io.err(`berth: instance ${ctx.instance} has no git source (no ${statusPath(ctx.stateDir, ctx.instance)}; reconcile --git makes one)\n`);
    return EXIT.failed;
  }
  if (o.output === 'json') {
    ctx.io.out(`${JSON.stringify({ schemaVersion: SCHEMA_VERSIONS.source, ...s }, null, 2)}\n`);
    return EXIT.ok;
  }
  const now = Date.now();
  const out: string[] = [];
  const kv = (k: string, v: string) => out.push(`${(k + ':').padEnd(13)}${v}`);
  const when = (iso: string | undefined) => (iso ? `${iso} (${age(iso, now)} ago)` : 'never');
  kv('URL', s.url);
  kv('Ref', s.ref ?? "HEAD (the remote's default branch)");
  kv('Path', s.path || '(the repository root)');
  kv('Revision', s.revision ? `${s.revision} (in force)` : 'none yet');
  kv('Fetched', when(s.fetchedAt));
  kv('Applied', when(s.appliedAt));
  if (s.stale && s.lastError) {
    const next = s.lastError.nextRetryAt ? `; next try ${s.lastError.nextRetryAt}` : '';
    kv('Stale', `yes: ${s.lastError.failures} fetch${s.lastError.failures === 1 ? '' : 'es'} failed in a row, the last at ${s.lastError.at}${next}`);
    out.push(`             ${s.lastError.message}`);
  } else kv('Stale', s.stale ? 'yes' : 'no');
  if (s.specErrors.length === 0) kv('Spec errors', 'none');
  else {
    kv('Spec errors', `${s.specErrors.length} (attempts under invalid specs are left as they are)`);
    for (const e of s.specErrors) out.push(`             ${formatIssue(e)}`);
  }
  ctx.io.out(`${out.join('\n')}\n`);
  return EXIT.ok;
}
