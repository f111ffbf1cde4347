/**
 * What redaction costs (docs/CONTRACT.md, berth's section; issue 41): the harvest of a
 * container's log of BENCH_REDACT_MB MiB (default 100; ordinary log lines, no secret in them)
 * into `logs.txt` with 5 secrets to redact (each in all its forms: plain, base64 at 3 alignments
 * standard and URL-safe, hex) against the same harvest with none, alternating, in-process
 * (src/execute/harvest.ts saveLog: the engine's log stream, redacted, capped at the default
 * --log-max-bytes, written). The container is made by the raw API, run once to its end.
 */
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { DEFAULTS } from '../../src/constants';
import { createDockerEngine } from '../../src/engine/docker';
import { saveLog } from '../../src/execute/harvest';
import { Redactor } from '../../src/util/redact';
import type { RawEngine } from '../lib/engine';
import { BENCH_LABEL, IMAGE, type BenchRun } from '../lib/fixture';

export interface RedactSamples {
  logBytes: number;
  secrets: number;
  /** Harvests of the log with the secrets to redact, ms. */
  redacted: number[];
  /** The same harvests with none (the plain copy), ms. */
  plain: number[];
}

export async function redactRounds(engine: RawEngine, run: BenchRun, mib: number, rounds: number, log: (m: string) => void): Promise<RedactSamples> {
  const dir = await run.dir('redact');
  const bytes = mib * 1024 * 1024;
  const line = '2026-12-05T01:00:00.000Z INFO step=1234 loss=0.01234 tokens=5678 lr=3e-4 ordinary log text of a training run';
  const id = await engine.createContainer(`bench-${run.id}-redact`, {
    Image: IMAGE,
    Cmd: ['sh', '-c', `yes '${line}' | head -c ${bytes}`],
    Labels: { [BENCH_LABEL]: run.id },
  });
  log(`redact: a container prints ${mib} MiB of log lines`);
  await engine.startContainer(id);
  const berthEngine = createDockerEngine();
  for (;;) {
    const st = await berthEngine.containers.inspect(id);
    if (!st.runState.running) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  const redactor = new Redactor(
    Array.from({ length: 5 }, (_, i) => ({ name: `secret-${i}`, value: Buffer.from(randomBytes(30).toString('base64')) })),
    DEFAULTS.redactMinBytes,
  );
  const out: RedactSamples = { logBytes: bytes, secrets: 5, redacted: [], plain: [] };
  const file = path.join(dir, 'logs.txt');
  for (let r = 0; r < rounds; r++) {
    const once = async (withSecrets: boolean): Promise<number> => {
      const t0 = performance.now();
      await saveLog(berthEngine, id, file, DEFAULTS.logMaxBytes, undefined, withSecrets ? redactor : undefined);
      const ms = performance.now() - t0;
      await fs.rm(file, { force: true });
      return ms;
    };
    if (r % 2 === 0) {
      out.redacted.push(await once(true));
      out.plain.push(await once(false));
    } else {
      out.plain.push(await once(false));
      out.redacted.push(await once(true));
    }
    log(`redact round ${r + 1}/${rounds}: with 5 secrets ${(out.redacted[r] as number).toFixed(0)} ms, with none ${(out.plain[r] as number).toFixed(0)} ms`);
  }
  await engine.removeContainer(id);
  await fs.rm(dir, { recursive: true, force: true });
  return out;
}
