/**
 * Reads an AttemptSet child's score from its run's results folder: a number, `true`/`false`,
 * JSON `{"score": n}` or `{"pass": true|false|0|1}`. The folder is what the attempt wrote, so nothing in it is trusted: no link is
 * followed (every folder on the way is lstat'ed, the file opened with O_NOFOLLOW and O_NONBLOCK so
 * a fifo cannot hang berth), only a regular file of at most SET_LIMITS.maxScoreBytes is read.
 * It runs when the run has ended (its containers stopped), so nothing changes the folder meanwhile.
 * Returns what it found; a problem is an `error`, never a score of 0.
 */
import { constants, promises as fs } from 'node:fs';
import path from 'node:path';
import { SET_LIMITS } from '../constants';

/** A score (with the file's own verdict, `pass`, when it gave one), or why there is none. */
export type ScoreRead = { score: number; pass?: boolean } | { error: string };

export async function readScore(resultsDir: string | undefined, file: string): Promise<ScoreRead> {
  if (!resultsDir) return { error: `${file}: the run has no results folder` };
  const parts = file.split('/').filter((p) => p !== '' && p !== '.');
  if (parts.length === 0 || parts.includes('..')) return { error: `${file}: not a path inside the results folder` };
  let dir = resultsDir;
  for (const p of parts.slice(0, -1)) {
    dir = path.join(dir, p);
    const st = await fs.lstat(dir).catch(() => undefined);
    if (!st) return { error: `${file}: not found` };
    if (!st.isDirectory()) return { error: `${file}: ${p} is ${st.isSymbolicLink() ? 'a link (not followed)' : 'not a folder'}` };
  }
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(path.join(dir, parts[parts.length - 1] as string), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'ENOENT') return { error: `${file}: not found` };
    if (code === 'ELOOP') return { error: `${file}: is a link (not followed)` };
    return { error: `${file}: cannot be opened (${code ?? String(err)})` };
  }
  try {
    const st = await handle.stat();
    if (!st.isFile()) return { error: `${file}: not a regular file` };
    if (st.size > SET_LIMITS.maxScoreBytes) return { error: `${file}: ${st.size} bytes, more than ${SET_LIMITS.maxScoreBytes}` };
    const buf = Buffer.alloc(SET_LIMITS.maxScoreBytes + 1);
    const { bytesRead } = await handle.read(buf, 0, buf.length, 0);
    return parseScore(buf.subarray(0, bytesRead).toString('utf8'), file);
  } catch (err) {
    return { error: `${file}: cannot be read (${(err as { code?: string }).code ?? String(err)})` };
  } finally {
    await handle.close();
  }
}

/** What a score file may hold (CONTRACT.md): said once, in every error. */
const SHAPES = 'a number, true/false, {"score": n} or {"pass": true|false|0|1}';

/**
 * A number (`0.75`), `true`/`false`, JSON `{"score": n}` or `{"pass": true|false|0|1}` (other
 * fields beside are left alone; both `score` and `pass` is ambiguous); anything else is an error.
 * A verdict (`true`, `{"pass": 1}`) is recorded as it is, and as the score 1 or 0.
 */
export function parseScore(text: string, file = 'score'): ScoreRead {
  const t = text.trim();
  if (t === '') return { error: `${file}: empty` };
  let v: unknown;
  try {
    v = JSON.parse(t);
  } catch {
    return { error: `${file}: not ${SHAPES}` };
  }
  if (typeof v === 'boolean') return verdict(v);
  if (typeof v === 'number') return Number.isFinite(v) ? { score: v } : { error: `${file}: not a finite number` };
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return { error: `${file}: not ${SHAPES}` };
  const o = v as { score?: unknown; pass?: unknown };
  if ('score' in o && 'pass' in o) return { error: `${file}: holds both "score" and "pass"; give one` };
  if ('pass' in o) {
    if (o.pass === true || o.pass === 1) return verdict(true);
    if (o.pass === false || o.pass === 0) return verdict(false);
    return { error: `${file}: "pass" must be true, false, 1 or 0` };
  }
  if (typeof o.score === 'number' && Number.isFinite(o.score)) return { score: o.score };
  return { error: `${file}: not ${SHAPES}` };
}

const verdict = (pass: boolean): ScoreRead => ({ score: pass ? 1 : 0, pass });
