import { randomBytes, createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { pack, extract } from 'tar-stream';
(async () => {
  const p = pack();
  for (let i = 0; i < 2100; i++) p.entry({ name: `workspace/d${i % 20}/f${i}.py`, mode: 0o644, size: 8400 }, randomBytes(4200).toString('hex'));
  p.finalize();
  const chunks: Buffer[] = []; for await (const c of p as any) chunks.push(c); const tar = Buffer.concat(chunks);
  const src = () => Readable.from((function* () { for (let o = 0; o < tar.length; o += 65536) yield tar.subarray(o, o + 65536); })());
  const iter = async () => { const ex = extract(); src().pipe(ex); let n = 0; for await (const e of ex) { const cs: Buffer[] = []; for await (const c of e as any) cs.push(c); createHash('sha256').update(Buffer.concat(cs)).digest(); n++; } return n; };
  const events = () => new Promise<number>((res, rej) => { const ex = extract(); let n = 0; ex.on('entry', (h, s, next) => { const cs: Buffer[] = []; s.on('data', (c: Buffer) => cs.push(c)); s.on('end', () => { createHash('sha256').update(Buffer.concat(cs)).digest(); n++; next(); }); }); ex.on('finish', () => res(n)); ex.on('error', rej); src().pipe(ex); });
  const hashOnly = () => { let n = 0; for (let o = 0; o < tar.length; o += 8704) { createHash('sha256').update(tar.subarray(o, o + 8400)).digest(); n++; } return n; };
  for (const [k, f] of [['iter', iter], ['events', events], ['hash', hashOnly]] as const) { const ts = []; for (let r = 0; r < 7; r++) { const t = performance.now(); await f(); ts.push(performance.now() - t); } ts.sort((a, b) => a - b); console.log(k, ts[3]!.toFixed(0), 'ms for', (tar.length / 2 ** 20).toFixed(1), 'MiB'); }
})();
