/**
 * Durable status records: `<state>/<instance>/attempts/<name>.json`, each written atomically
 * (temp file, fsync, rename, fsync the folder). Reads are served from memory after the first
 * load; the store is the only writer of these files.
 */
import { promises as fs, readdirSync } from 'node:fs';
import path from 'node:path';
import { isCode, readJsonFileSync, writeFileAtomic } from './atomic-file';
import type { AttemptStatus } from './types';
import { mapChunked } from '../util/pool';

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
      entries = readdirSync(this.dir);
    } catch (err) {
      if (!isCode(err, 'ENOENT')) throw err;
    }
    const files = entries.filter((e) => e.endsWith('.json') && !e.startsWith('.')).sort();
    // Synchronous reads in chunks: a thousand records ~20 ms, against ~70-100 ms for promise-based reads.
    const recs = await mapChunked(files, 100, (entry) => readJsonFileSync<AttemptStatus>(path.join(this.dir, entry)));
    recs.forEach((r, i) => {
      if (r && r.name === (files[i] ?? '').slice(0, -5)) map.set(r.name, r);
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
