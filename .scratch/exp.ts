// export timing, engine-free: a 2,000-file fixture on disk, a tar of the workspace (200 modified, 100 added) from memory
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, promises as fsp, writeFileSync, mkdirSync } from 'node:fs';
import os from 'node:os'; import path from 'node:path'; import { Readable } from 'node:stream';
import { pack } from 'tar-stream';
import { exportWorkspace, writeWorkspaceBase, type WorkspaceBase } from '/work/main/src/execute/workspace-export';
import type { Engine } from '/work/main/src/engine/types';
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
(async () => {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'exp-'));
  const fx = path.join(tmp, 'fixture'); const entries: any[] = [{ path: '.', type: 'dir', mode: 0o755, size: 0 }];
  const files: { rel: string; body: Buffer }[] = [];
  for (let d = 0; d < 20; d++) { mkdirSync(path.join(fx, `d${d}`), { recursive: true }); entries.push({ path: `d${d}`, type: 'dir', mode: 0o755, size: 0 });
    for (let i = 0; i < 100; i++) { const rel = `d${d}/f${i}.py`; const body = Buffer.from(Array.from({ length: 200 }, (_, k) => `line ${k} of ${rel} ${randomBytes(8).toString('hex')}\n`).join('')); writeFileSync(path.join(fx, rel), body); files.push({ rel, body }); entries.push({ path: rel, type: 'file', mode: 0o644, size: body.length, sha256: sha(body) }); } }
  const p = pack();
  p.entry({ name: 'workspace/', type: 'directory', mode: 0o755 });
  for (let d = 0; d < 20; d++) { p.entry({ name: `workspace/d${d}/`, type: 'directory', mode: 0o755 });
    for (let i = 0; i < 100; i++) { const f = files[d * 100 + i]!; let body = f.body; if (i % 10 === 0) body = Buffer.concat([body.subarray(0, 4000), Buffer.from('changed\n'), body.subarray(4000)]); p.entry({ name: `workspace/${f.rel}`, mode: 0o644, size: body.length }, body); }
    for (let i = 0; i < 5; i++) p.entry({ name: `workspace/d${d}/new${i}.py`, mode: 0o644, size: 10240 }, randomBytes(5120).toString('hex')); }
  p.finalize();
  const chunks: Buffer[] = []; for await (const c of p as any) chunks.push(c); const tar = Buffer.concat(chunks);
  const engine = { containers: { getArchive: async () => Readable.from((function* () { for (let o = 0; o < tar.length; o += 65536) yield tar.subarray(o, o + 65536); })()) } } as unknown as Engine;
  const ts: number[] = [];
  for (let r = 0; r < 8; r++) {
    const runDir = path.join(tmp, `run-${r}`); await fsp.mkdir(runDir);
    await writeWorkspaceBase(runDir, { version: 1, workingDir: '/workspace', settings: { export: 'changes', exclude: [], maxBytes: 1 << 30, maxFiles: 100000 }, fixture: fx, fixtureDigest: 'd'.repeat(64), copied: true, entries } as WorkspaceBase);
    const t = performance.now(); const res = await exportWorkspace(engine, runDir, 'c'); ts.push(performance.now() - t);
    if (!res.done) throw new Error('not done');
  }
  console.log('export ms', ts.map((x) => x.toFixed(0)).join(' '), 'tar MiB', (tar.length / 2 ** 20).toFixed(1));
  await fsp.rm(tmp, { recursive: true, force: true });
})();
