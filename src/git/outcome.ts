/**
 * Per-revision outcome: once every attempt whose current run was created from a revision has
 * finished, that revision's summary is written to `<state>/git/<instance>/outcomes/<sha>.json`
 * (once) and, with `--notify-url`, POSTed there as JSON signed like a webhook
 * (`X-Berth-Signature-256: sha256=<HMAC-SHA256 of the body>`), retried with back-off (1 s
 * doubling, NOTIFY_TRIES tries) in the background: the controller's loop never waits for it;
 * `reconcile --once` waits for the deliveries (drain()) before it exits.
 *
 * With the specs' sets known (the load the caller passes), the outcome also carries its sets'
 * children as the summary judges them (`sets`), and the comparison with the revision whose
 * outcome was written before it (`comparison`, sets/compare.ts as `berth compare --baseline`:
 * the children of this revision paired by name with the same children there), so a push that
 * broke tasks says so in its notification. `outcomes/latest` names that revision (the last
 * outcome written with sets).
 */
import { createHmac } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { FINISHED_PHASES } from '../constants';
import { compareResult, compareWithBaseline, type CompareResult, type SideSet } from '../sets/compare';
import { pText, points } from '../sets/compare-text';
import { judgeSet, setsOfLoad } from '../sets/summary';
import type { LoadedSet, LoadedSpec } from '../spec/types';
import { writeFileAtomic } from '../status/atomic-file';
import type { AttemptStatus } from '../status/types';
import type { Logger } from '../util/log';

export const NOTIFY_TRIES = 6;

export interface RevisionOutcome {
  revision: string;
  url: string;
  finishedAt: string;
  counts: Record<string, number>;
  attempts: {
    name: string;
    phase: string;
    reason: string | null;
    exitCode: number | null;
    startedAt: string | null;
    finishedAt: string | null;
    resultsDir: string | null;
  }[];
  /** The revision's AttemptSet children, judged as the summary judges them (only sets with a child of this revision). */
  sets?: SideSet[];
  /** Against the revision whose outcome was written before this one: its children of the same names. */
  comparison?: CompareResult & { against: string };
}

/** What the outcomes need of a spec load to know the sets. */
export interface SetsLoad {
  specs: readonly LoadedSpec[];
  sets?: ReadonlyMap<string, LoadedSet>;
}

/** Of every set now, the children whose current run came from the revision `r` (pure). */
export function revisionSets(all: readonly SideSet[], r: RevisionOutcome): SideSet[] {
  const names = new Set(r.attempts.map((a) => a.name));
  return all
    .map((s) => ({
      name: s.name,
      axes: s.axes,
      samplesAxis: s.samplesAxis,
      children: s.children.filter((c) => names.has(c.name)).map((c) => ({ name: c.name, coords: c.coords, outcome: c.outcome, reason: c.reason ?? null })),
    }))
    .filter((s) => s.children.length > 0);
}

/**
 * This revision's sets against the same sets of the revision before (pure): each child paired
 * with the child of the same name there (children it did not have are unpaired); a set the
 * revision before did not have is left out. Undefined when there is nothing to compare.
 */
export function compareRevisions(before: RevisionOutcome, now: RevisionOutcome): (CompareResult & { against: string }) | undefined {
  const was = new Map((before.sets ?? []).map((s) => [s.name, s]));
  const sets = (now.sets ?? []).flatMap((s) => {
    const b = was.get(s.name);
    if (!b) return [];
    const names = new Set(s.children.map((c) => c.name));
    return [compareWithBaseline({ ...b, children: b.children.filter((c) => names.has(c.name)) }, s)];
  });
  if (!sets.length) return undefined;
  return {
    against: before.revision,
    ...compareResult('baseline', sets, { baseline: { file: `${before.revision}.json`, generatedAt: before.finishedAt || null } }),
  };
}

/** The comparison in one line for the log: per set, the rates, the difference, p and the regressions. */
export function comparisonLine(c: CompareResult & { against: string }): string {
  const sets = c.sets.flatMap((s) =>
    s.status !== 'compared'
      ? [`set ${s.set} not compared (${s.message ?? s.status})`]
      : s.comparisons.map(
          (x) =>
            `set ${s.set} ${x.passed.before}/${x.samples} → ${x.passed.after}/${x.samples} (${points(x.difference)}, p = ${pText(x.pValue)}${x.regression ? ', a regression' : ''}; ${x.regressions.length} fell, ${x.fixes.length} rose)`,
        ),
  );
  return `against ${c.against.slice(0, 12)}: ${sets.join('; ')}`;
}

/** The revisions all of whose attempts have finished, with their outcome (pure). */
export function finishedRevisions(statuses: Iterable<AttemptStatus>, url: string): RevisionOutcome[] {
  const by = new Map<string, AttemptStatus[]>();
  for (const s of statuses) if (s.revision) by.set(s.revision, [...(by.get(s.revision) ?? []), s]);
  const out: RevisionOutcome[] = [];
  for (const [revision, list] of by) {
    if (!list.every((s) => FINISHED_PHASES.has(s.phase))) continue;
    const sorted = [...list].sort((a, b) => (a.name < b.name ? -1 : 1));
    const counts: Record<string, number> = {};
    for (const s of sorted) counts[s.phase] = (counts[s.phase] ?? 0) + 1;
    const last =
      sorted
        .map((s) => s.finishedAt ?? '')
        .sort()
        .at(-1) ?? '';
    out.push({
      revision,
      url,
      finishedAt: last,
      counts,
      attempts: sorted.map((s) => ({
        name: s.name,
        phase: s.phase,
        reason: s.reason ?? null,
        exitCode: s.exitCode ?? null,
        startedAt: s.startedAt ?? null,
        finishedAt: s.finishedAt ?? null,
        resultsDir: s.resultsDir ?? null,
      })),
    });
  }
  return out;
}

export function signBody(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

export class RevisionOutcomes {
  private readonly written = new Set<string>();
  /** Deliveries under way (each ends delivered or given up); drain() waits for them. */
  private readonly sending = new Set<Promise<void>>();
  /** Checks under way (each may write an outcome and start its delivery). */
  private readonly checking = new Set<Promise<void>>();
  /** Back-off waits under way: close() ends them. */
  private readonly waits = new Map<NodeJS.Timeout, () => void>();
  private closed = false;
  /** The latest spec load given: which children are a set's, and how their outcomes are judged. */
  private load: SetsLoad | undefined;

  constructor(private readonly o: { root: string; url: string; log: Logger; notify?: { url: string; secret: string } }) {}

  get dir(): string {
    return path.join(this.o.root, 'outcomes');
  }

  /**
   * Writes (and starts sending, without waiting for it) the outcome of every revision that has
   * just finished. `load`: the specs as last loaded (kept for later checks that have none), for
   * the sets and the comparison.
   */
  check(statuses: Iterable<AttemptStatus>, load?: SetsLoad): Promise<void> {
    if (load) this.load = load;
    // drain() waits for checks under way too: one may have claimed a revision another check skips
    const p = this.checkNow([...statuses]).finally(() => this.checking.delete(p));
    this.checking.add(p);
    return p;
  }

  /** Every set now, judged (once per check, and only when a revision is written). */
  private setsNow(statuses: readonly AttemptStatus[]): SideSet[] {
    if (!this.load) return [];
    const byName = new Map(statuses.map((s) => [s.name, s]));
    return [...setsOfLoad(this.load.specs, this.load.sets ?? new Map())]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, g]) => judgeSet(g.policy, g.children, byName));
  }

  /** The outcome written before (`outcomes/latest`), unless it is `revision`'s own or cannot be read. */
  private async previous(revision: string): Promise<RevisionOutcome | undefined> {
    const last = (await fs.readFile(path.join(this.dir, 'latest'), 'utf8').catch(() => '')).trim();
    if (!/^[0-9a-f]{7,64}$/.test(last) || last === revision) return undefined;
    try {
      return JSON.parse(await fs.readFile(path.join(this.dir, `${last}.json`), 'utf8')) as RevisionOutcome;
    } catch {
      return undefined;
    }
  }

  private async checkNow(statuses: readonly AttemptStatus[]): Promise<void> {
    let sets: SideSet[] | undefined;
    for (const found of finishedRevisions(statuses, this.o.url)) {
      let r = found;
      if (this.written.has(r.revision)) continue;
      const file = path.join(this.dir, `${r.revision}.json`);
      this.written.add(r.revision);
      if (
        await fs.access(file).then(
          () => true,
          () => false,
        )
      )
        continue; // written before a restart
      sets ??= this.setsNow(statuses);
      const mine = revisionSets(sets, r);
      if (mine.length) r = { ...r, sets: mine };
      const before = mine.length ? await this.previous(r.revision) : undefined;
      const comparison = before ? compareRevisions(before, r) : undefined;
      if (comparison) r = { ...r, comparison };
      const body = `${JSON.stringify(r, null, 2)}\n`;
      await fs.mkdir(this.dir, { recursive: true, mode: 0o700 });
      await writeFileAtomic(file, body);
      if (mine.length) await writeFileAtomic(path.join(this.dir, 'latest'), `${r.revision}\n`);
      this.o.log.info(
        `revision ${r.revision.slice(0, 12)}: every attempt finished (${Object.entries(r.counts)
          .map(([p, n]) => `${n} ${p}`)
          .join(', ')}); outcome in ${file}${comparison ? `; ${comparisonLine(comparison)}` : ''}`,
      );
      if (this.o.notify) {
        const p = this.deliver(this.o.notify, body, r.revision).finally(() => this.sending.delete(p));
        this.sending.add(p);
      }
    }
  }

  /** Waits until every delivery started has ended, delivered or given up (`reconcile --once`, before it exits). */
  async drain(): Promise<void> {
    while (this.sending.size + this.checking.size > 0) await Promise.allSettled([...this.checking, ...this.sending]);
  }

  /** POSTs `body`, up to NOTIFY_TRIES times with back-off; never rejects. */
  private async deliver(n: { url: string; secret: string }, body: string, revision: string): Promise<void> {
    for (let tries = 0; !this.closed; tries++) {
      let why: string;
      try {
        const res = await fetch(n.url, {
          method: 'POST',
          body,
          headers: { 'content-type': 'application/json', 'x-berth-signature-256': signBody(n.secret, body), 'x-berth-revision': revision },
          signal: AbortSignal.timeout(10_000),
        });
        await res.body?.cancel().catch(() => undefined);
        if (res.ok) {
          this.o.log.info(`--notify-url: revision ${revision.slice(0, 12)} delivered`);
          return;
        }
        why = `HTTP ${res.status}`;
      } catch (err) {
        why = String((err as Error).message ?? err);
      }
      if (tries + 1 >= NOTIFY_TRIES) {
        this.o.log.warn(`--notify-url: revision ${revision.slice(0, 12)} not delivered after ${NOTIFY_TRIES} tries: ${why}`);
        return;
      }
      await this.wait(1000 * 2 ** tries);
    }
  }

  private wait(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.waits.delete(t);
        resolve();
      }, ms);
      t.unref();
      this.waits.set(t, resolve);
    });
  }

  /** No more tries: deliveries waiting for their next try end now. */
  close(): void {
    this.closed = true;
    for (const [t, resolve] of this.waits) {
      clearTimeout(t);
      resolve();
    }
    this.waits.clear();
  }
}
