/**
 * The exported workspace: what `run-<n>/workspace/changes.json` holds (see docs/CONTRACT.md,
 * "The workspace comes home"). The grader reads it; keep the shape stable.
 *
 * run-<n>/workspace/
 *   changes.json   written last (atomic); its presence means the export is complete
 *   changes.patch  unified diff against the fixture as copied in (`git apply` / `patch -p1`)
 *   files/<path>   every added or modified regular file, bytes as in the container, mode kept
 */

export interface ChangedEntry {
  /** POSIX, relative to workingDir, no leading './'. */
  path: string;
  type: 'file' | 'link' | 'dir';
  /** Files. */
  size?: number;
  /** Files, hex. */
  sha256?: string;
  /** Permission bits (0o7777 masked). */
  mode?: number;
  /** Links: the link's target, as read (never followed). */
  target?: string;
  /** Files: changed bytes are not text (so only in files/, named in the patch). */
  binary?: boolean;
  /**
   * Files: the names of the run's secrets whose value the file holds. Its bytes are in files/ as
   * written; the patch names it without its content (as a binary file).
   */
  secrets?: string[];
}

/** `unsafe-name`: an archive entry whose name leaves the tree (`..`, absolute) or repeats one (never from a real engine). */
export type OmittedReason = 'excluded' | 'max-bytes' | 'max-files' | 'not-regular' | 'link-outside' | 'name-not-utf8' | 'too-deep' | 'unsafe-name';

export interface OmittedEntry {
  /** As far as it can be said in UTF-8 (escaped where it is not). */
  path: string;
  reason: OmittedReason;
}

export type EntryType = 'file' | 'link' | 'dir';

export interface WorkspaceChanges {
  version: 1;
  workingDir: string;
  /** The fixture digest the export compared against (null: no fixture, every file is added). */
  fixtureDigest: string | null;
  added: ChangedEntry[];
  modified: ChangedEntry[];
  deleted: { path: string; type: EntryType }[];
  typeChanged: (ChangedEntry & { from: EntryType })[];
  omitted: OmittedEntry[];
  /** A cap was reached: the export is incomplete. */
  truncated: boolean;
  caps: { maxBytes: number; maxFiles: number };
  /** With a run's secrets: what the files written were scanned for, and how many hold one. */
  secretScan?: { secrets: string[]; filesWithSecrets: number };
  exportedAt: string;
}
