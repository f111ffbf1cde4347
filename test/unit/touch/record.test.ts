/**
 * The exec record's begin lines (src/touch/record.ts): each is synced before its call resolves,
 * and syncs asked at once are shared (a group commit): 60 lines begun at once, each found
 * covered by a sync that began after it was written, in far fewer syncs than lines.
 */
import { expect } from 'chai';
import { readFileSync, promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EXEC } from '../../../src/constants';
import { appendLine } from '../../../src/touch/record';

describe('touch/record: synced begin lines', () => {
  it('every begin line is synced before its call resolves, 60 at once in a few syncs', async () => {
    const base = await fsp.mkdtemp(path.join(os.tmpdir(), 'berth-record-'));
    const runDir = path.join(base, 'a', 'run-1');
    await fsp.mkdir(runDir, { recursive: true });
    const file = path.join(runDir, EXEC.record);
    const probe = await fsp.open(path.join(base, 'probe'), 'w');
    const proto = Object.getPrototypeOf(probe) as { datasync(this: fsp.FileHandle): Promise<void> };
    await probe.close();
    const original = proto.datasync;
    // each sync: how many lines the file held when it began; `done`: the syncs that have ended
    const done: number[] = [];
    let syncs = 0;
    proto.datasync = async function (this: fsp.FileHandle) {
      syncs++;
      const lines = readFileSync(file, 'utf8').split('\n').length - 1;
      await original.call(this);
      done.push(lines);
    };
    try {
      const covered: boolean[] = [];
      await Promise.all(
        Array.from({ length: 60 }, async (_, i) => {
          const id = `x${i}`;
          await appendLine({ base, runDir }, { id, at: new Date().toISOString(), event: 'begin', kind: 'exec', by: 'api', cmd: ['true'] }, true);
          const at = readFileSync(file, 'utf8')
            .split('\n')
            .findIndex((l) => l.includes(`"id":"${id}"`));
          covered.push(at >= 0 && done.some((n) => n > at));
        }),
      );
      expect(covered).to.have.length(60);
      expect(covered.every(Boolean), 'a line resolved before a sync that covers it ended').to.equal(true);
      expect(syncs).to.be.at.least(1).and.below(30);
    } finally {
      proto.datasync = original;
      await fsp.rm(base, { recursive: true, force: true });
    }
  });
});
