/**
 * Durable status records: `<state>/<instance>/attempts/<name>.json`, each written atomically
 * (temp file, fsync, rename, fsync the folder). Reads are served from memory after the first
 * load; the store is the only writer of these files.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { readJsonFile, writeFileAtomic } from './atomic-file';
import type { AttemptStatus } from './types';
import { runBounded } from '../util/pool';

export class StatusStore {
  private cache: Map<string, AttemptStatus> | undefined;
  readonly dir: string;

  constructor(stateDir: string, readonly instance: string) {
    this.dir = path.join(path.resolve(stateDir), instance, 'attempts');
  }

  private file(name: string): string {
    return path.join(this.dir, `${name}.json`);
  }

  async loadAll(): Promise<Map<string, AttemptStatus>> {
    if (this.cache) return this.cache;
    const map = new Map<string, AttemptStatus>();
    let entries: string[] = [];
    try {
      entries = await fs.readdir(this.dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    const files = entries.filter((e) => e.endsWith('.json') && !e.startsWith('.')).sort();
    // read side by side (bounded): a thousand small files one after another cost ~200 ms
    const recs = await runBounded(files, 64, (entry) => readJsonFile<AttemptStatus>(path.join(this.dir, entry)));
    recs.forEach((r, i) => {
      if (r.status === 'rejected') throw r.reason;
      const entry = files[i] ?? '';
      if (r.value && r.value.name === entry.slice(0, -5)) map.set(r.value.name, r.value);
    });
    this.cache = map;
    return map;
  }

  /** Forget the in-memory copy so the next read comes from disk (another process may have written). */
  invalidate(): void {
    this.cache = undefined;
  }

  async get(name: string): Promise<AttemptStatus | undefined> {
    return (await this.loadAll()).get(name);
  }

  async put(rec: AttemptStatus): Promise<void> {
    const map = await this.loadAll();
    const next = { ...rec, updatedAt: new Date().toISOString() };
    await fs.mkdir(this.dir, { recursive: true });
    await writeFileAtomic(this.file(rec.name), JSON.stringify(next, null, 2) + '\n');
    map.set(rec.name, next);
  }

  async remove(name: string): Promise<void> {
    const map = await this.loadAll();
    await fs.rm(this.file(name), { force: true });
    map.delete(name);
  }
}
