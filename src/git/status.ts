/**
 * What berth knows about its git source, kept in `<state>/git/source.json` (written
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

export function statusPath(stateDir: string): string {
  return path.join(stateDir, 'git', GIT.statusFile);
}

export async function readSourceStatus(stateDir: string): Promise<SourceStatus | undefined> {
  try {
    return JSON.parse(await fs.readFile(statusPath(stateDir), 'utf8')) as SourceStatus;
  } catch {
    return undefined;
  }
}

export async function writeSourceStatus(stateDir: string, s: SourceStatus): Promise<void> {
  await fs.mkdir(path.dirname(statusPath(stateDir)), { recursive: true, mode: 0o700 });
  await writeFileAtomic(statusPath(stateDir), `${JSON.stringify(s, null, 2)}\n`);
}
