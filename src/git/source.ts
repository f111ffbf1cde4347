/**
 * A git source of specs (docs/CONTRACT.md "Specs from git"): fetch REF of URL into the mirror,
 * write out the revision's specs folder, switch `current` to it, and keep what happened in
 * `source.json`. A fetch that fails leaves the last good revision in force, marked stale; the
 * next try comes after a back-off (doubling from DEFAULTS.gitRetryBaseMs up to the interval).
 *
 * Revision folders kept: the one in force, the one before it (a load or a batch planned from it
 * may still read it), one being switched to, and those held by actions under way (hold());
 * every other is removed at a switch, when a hold ends, and at start (nothing is under way then).
 * A switch writes the new folder out whole before `current` is renamed to it, and removes the
 * old only after: a kill at any step leaves `current` on a whole revision.
 */
import path from 'node:path';
import { DEFAULTS } from '../constants';
import type { SpecError } from '../spec/types';
import type { Logger } from '../util/log';
import { credentialOptions, type GitCredentials } from './credentials';
import { GitError } from './exec';
import { GitMirror } from './mirror';
import { gitRoot, readSourceStatus, writeSourceStatus, type SourceStatus } from './status';
import type { GitUrl } from './url';

export interface GitSourceConfig {
  url: GitUrl;
  ref?: string;
  /** Normalized `--git-path` ('' for the root). */
  path: string;
  stateDir: string;
  /** The instance the source feeds: its files live in `<state>/git/<instance>`. */
  instance: string;
  intervalMs: number;
  log: Logger;
  credentials?: GitCredentials;
  /** `--git-verify`: only commits signed by a key in this allowed-signers file are applied. */
  allowedSigners?: string;
  now?: () => number;
}

export interface Revision {
  revision: string;
  /** The revision's specs folder. */
  dir: string;
}

export type SyncOutcome = { ok: true; revision: Revision; changed: boolean } | { ok: false; message: string; inForce: Revision | undefined };

export class GitSource {
  readonly mirror: GitMirror;
  private status: SourceStatus | undefined;
  private inForce: Revision | undefined;
  /** The revision in force before the last switch. */
  private previous: string | undefined;
  /** A revision fetched and being written out, not switched to yet. */
  private switching: string | undefined;
  /** Revisions actions under way were planned from, and how many hold each. */
  private readonly holds = new Map<string, number>();
  private failures = 0;
  private readonly now: () => number;

  constructor(readonly cfg: GitSourceConfig) {
    const root = gitRoot(cfg.stateDir, cfg.instance);
    this.mirror = new GitMirror(root, { home: path.join(root, 'home') });
    this.now = cfg.now ?? Date.now;
  }

  /** The mirror made or checked, leftovers removed, the revision in force before any fetch read. */
  async prepare(): Promise<Revision | undefined> {
    await this.init();
    this.inForce = await this.mirror.current();
    const kept = await readSourceStatus(this.cfg.stateDir, this.cfg.instance);
    // What is kept about another source (another URL, ref or path) is not this one's.
    const same = kept && kept.url === this.cfg.url.display && kept.ref === this.cfg.ref && kept.path === this.cfg.path;
    this.status = {
      url: this.cfg.url.display,
      ...(this.cfg.ref !== undefined ? { ref: this.cfg.ref } : {}),
      path: this.cfg.path,
      stale: same ? kept.stale : false,
      specErrors: same ? kept.specErrors : [],
      ...(same && kept.fetchedAt ? { fetchedAt: kept.fetchedAt } : {}),
      ...(same && kept.appliedAt ? { appliedAt: kept.appliedAt } : {}),
      ...(same && kept.lastError ? { lastError: kept.lastError } : {}),
      updatedAt: this.iso(),
    };
    // The link is only trusted for the same source: another one's revisions (another path, too) are not this one's.
    if (!same && kept) {
      this.inForce = undefined;
      await this.mirror.prune([]);
    }
    if (this.inForce) this.status.revision = this.inForce.revision;
    // What a berth killed between a switch and its cleanup left behind.
    await this.mirror.prune(this.kept());
    await this.save();
    return this.inForce;
  }

  /** The mirror made or checked, and the credentials in place (the askpass script written). */
  async init(): Promise<void> {
    await this.mirror.init();
    if (this.cfg.credentials) this.mirror.useCredentials(await credentialOptions(this.cfg.credentials, this.mirror.home));
  }

  current(): Revision | undefined {
    return this.inForce;
  }

  stale(): boolean {
    return this.status?.stale ?? false;
  }

  /** One fetch; on a new commit, its specs folder written out and switched to. */
  async sync(): Promise<SyncOutcome> {
    const st = this.mustStatus();
    let rev: Revision;
    try {
      const sha = await this.mirror.fetch(this.cfg.url.url, this.cfg.ref);
      this.switching = sha;
      if (this.cfg.allowedSigners !== undefined) await this.mirror.verify(sha, this.cfg.allowedSigners);
      const dir = await this.mirror.materialize(sha, this.cfg.path);
      rev = { revision: sha, dir };
    } catch (err) {
      this.switching = undefined;
      this.failures++;
      const message = err instanceof GitError ? err.message : `git source: ${String(err)}`;
      const wait = this.nextDelayMs();
      st.stale = true;
      st.lastError = { at: this.iso(), message, failures: this.failures, nextRetryAt: new Date(this.now() + wait).toISOString() };
      st.updatedAt = this.iso();
      await this.save();
      this.cfg.log.error(
        `${this.cfg.url.display}: no new revision taken (${this.failures} failure${this.failures === 1 ? '' : 's'} in a row): ${message}; ${this.inForce ? `revision ${short(this.inForce.revision)} stays in force (stale)` : 'no revision in force yet'}`,
      );
      return { ok: false, message, inForce: this.inForce };
    }
    const before = this.inForce?.revision;
    const changed = before !== rev.revision;
    if (!changed) this.switching = undefined;
    if (changed) {
      try {
        await this.mirror.switchTo(rev.revision);
      } finally {
        this.switching = undefined;
      }
      this.inForce = rev;
      this.previous = before;
      await this.mirror.prune(this.kept());
      this.cfg.log.info(`${this.cfg.url.display}: revision ${short(rev.revision)} in force${before ? ` (was ${short(before)})` : ''}`);
      st.revision = rev.revision;
      delete st.appliedAt;
      st.specErrors = [];
    }
    if (this.failures > 0 || st.stale) this.cfg.log.info(`${this.cfg.url.display}: fetched again after ${this.failures} failures`);
    this.failures = 0;
    st.stale = false;
    delete st.lastError;
    st.fetchedAt = this.iso();
    st.updatedAt = this.iso();
    await this.save();
    return { ok: true, revision: rev, changed };
  }

  /** A pass planned from `revision`: when first, and the revision's spec errors. */
  async applied(revision: string, errors: readonly SpecError[]): Promise<void> {
    const st = this.mustStatus();
    if (st.revision !== revision) return;
    const specErrors = errors.map((e) => ({ file: e.file, line: e.line, col: e.col, path: e.path, code: e.code, message: e.message }));
    if (st.appliedAt && JSON.stringify(specErrors) === JSON.stringify(st.specErrors)) return;
    st.appliedAt ??= this.iso();
    st.specErrors = specErrors;
    st.updatedAt = this.iso();
    await this.save();
  }

  /**
   * Keeps `revision`'s folder until the function returned is called (an action planned from it
   * may read its fixtures while later revisions are switched to); then it goes, unless still kept.
   */
  hold(revision: string): () => void {
    this.holds.set(revision, (this.holds.get(revision) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.holds.get(revision) ?? 1) - 1;
      if (left > 0) {
        this.holds.set(revision, left);
        return;
      }
      this.holds.delete(revision);
      if (this.kept().includes(revision)) return;
      void this.mirror.prune(this.kept()).catch((err: unknown) => this.cfg.log.warn(`git source: removing revision ${short(revision)}: ${String(err)}`));
    };
  }

  /** The revisions whose folders stay. */
  kept(): string[] {
    const keep = new Set<string>(this.holds.keys());
    for (const r of [this.inForce?.revision, this.previous, this.switching]) if (r !== undefined) keep.add(r);
    return [...keep];
  }

  /** When to fetch next: the interval, or a back-off after failures (doubling, capped at the interval). */
  nextDelayMs(): number {
    if (this.failures === 0) return this.cfg.intervalMs;
    return Math.min(this.cfg.intervalMs, DEFAULTS.gitRetryBaseMs * 2 ** (this.failures - 1));
  }

  private mustStatus(): SourceStatus {
    if (!this.status) throw new Error('GitSource.prepare() was not called');
    return this.status;
  }

  private async save(): Promise<void> {
    if (this.status) await writeSourceStatus(this.cfg.stateDir, this.cfg.instance, this.status);
  }

  private iso(): string {
    return new Date(this.now()).toISOString();
  }
}

export function short(sha: string): string {
  return sha.slice(0, 12);
}
