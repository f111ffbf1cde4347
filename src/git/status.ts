/**
 * What berth knows about an instance's git source, kept in `<state>/git/<instance>/source.json` (written
 * atomically) for `berth source`: the URL (it holds no credentials: url.ts refuses those), the
 * ref and path, the revision in force, when it was last fetched and first applied, the spec
 * errors of that revision, and whether it is stale (the last fetch failed).
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { GIT } from '../constants';
import { writeFileAtomic } from '../status/atomic-file';
import type { SpecIssue } from '../status/types';

export interface SourceStatus {
  url: string;
  /** `--git-ref`; absent: the remote's default branch. */
  ref?: string;
  /** `--git-path`; '' for the repository's root. */
  path: string;
  /** The commit in force: the specs every pass reads. */
  revision?: string;
  /** The last fetch that succeeded. */
  fetchedAt?: string;
  /** When a pass first planned from the revision in force. */
  appliedAt?: string;
  /** The last fetch failed: the revision in force may be behind the remote. */
  stale: boolean;
  lastError?: { at: string; message: string; failures: number; nextRetryAt?: string };
  /** Spec errors of the revision in force (attempts under them are left as they are). */
  specErrors: SpecIssue[];
  updatedAt: string;
}

/** `<state>/git/<instance>`: the instance's mirror, revisions and source.json. */
export function gitRoot(stateDir: string, instance: string): string {
  return path.join(stateDir, 'git', instance);
}

export function statusPath(stateDir: string, instance: string): string {
  return path.join(gitRoot(stateDir, instance), GIT.statusFile);
}

export async function readSourceStatus(stateDir: string, instance: string): Promise<SourceStatus | undefined> {
  try {
    return JSON.parse(await fs.readFile(statusPath(stateDir, instance), 'utf8')) as SourceStatus;
  } catch {
    return undefined;
  }
}

export async function writeSourceStatus(stateDir: string, instance: string, s: SourceStatus): Promise<void> {
  await fs.mkdir(gitRoot(stateDir, instance), { recursive: true, mode: 0o700 });
  await writeFileAtomic(statusPath(stateDir, instance), `${JSON.stringify(s, null, 2)}\n`);
}
