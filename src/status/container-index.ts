/**
 * The records by the container id they name (src/ownership.ts `recordedContainers`), kept beside a
 * store's records from one batch to the next (issue 55): a controller over 100,000 records looks
 * the ids up at every batch, and made the map again each time (a dropped file paid for it). The
 * records' writes update it; it is made again from the records only when they were read again, or
 * when two records name one id (then the records' order decides, as recordedContainers does).
 */
import type { AttemptStatus } from './types';

export class ContainerIndex {
  private byId = new Map<string, AttemptStatus>();
  /** The records map the index was made from (a new read of the records makes it again). */
  private of: ReadonlyMap<string, AttemptStatus> | undefined;
  /** Two records named one id when it was made: made again at every look while so (rare: damage, a hand edit). */
  private ambiguous = false;

  /** The records by the container id they name, over `records` (the store's map, as written since it was read); not to be changed. */
  over(records: ReadonlyMap<string, AttemptStatus>): ReadonlyMap<string, AttemptStatus> {
    if (this.of !== records || this.ambiguous) {
      this.byId = new Map();
      this.ambiguous = false;
      for (const s of records.values()) {
        if (!s.containerId) continue;
        if (this.byId.has(s.containerId)) this.ambiguous = true;
        this.byId.set(s.containerId, s);
      }
      this.of = records;
    }
    return this.byId;
  }

  /** A record of `records` replaced (`before`: none for a new one; `after`: none for one removed). */
  wrote(records: ReadonlyMap<string, AttemptStatus>, before: AttemptStatus | undefined, after: AttemptStatus | undefined): void {
    if (this.of !== records || this.ambiguous) return; // made again at the next look
    const was = before?.containerId;
    if (was && this.byId.get(was) === before) this.byId.delete(was);
    const now = after?.containerId;
    if (!now) return;
    const holder = this.byId.get(now);
    if (holder && holder.name !== after.name) {
      this.of = undefined; // two records name one id: the records' order decides (made again)
      return;
    }
    this.byId.set(now, after);
  }

  /** The records were read again (or dropped): made again at the next look. */
  forget(): void {
    this.of = undefined;
  }
}
