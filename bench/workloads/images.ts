/**
 * Images from a registry (issue 49, `BENCH_ONLY=images`): a fleet over distinct images that are
 * not on the engine, pulled from a real registry of the bench's own (test/support/registry.ts:
 * Debian's docker-registry with TLS and htpasswd on the docker0 gateway; the images made here,
 * `berth/busybox:local` plus a layer of random bytes, and pushed to it: nothing is downloaded).
 *
 * - berth: `reconcile --once --wait --max-running 2` over 12 attempts, 2 per image, 6 images of
 *   50-100 MB, each attempt `sleep 3`; the credential from a DOCKER_CONFIG of the bench's own.
 *   Prefetch pulls the images of the attempts waiting for a slot while the slots are busy.
 * - peer: a script doing `docker pull` then `docker run --rm` per attempt, `xargs -P 2`, the same
 *   credential.
 * Every round starts with none of the 6 images on the engine. Rounds alternate which goes first.
 * Then a set of 50 attempts over one image (not on the engine): the registry's access log counts
 * its blob requests: each blob once (one pull).
 */
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { StatusStore } from '../../src/status/store';
import { makeTestImage, removeImage, TestRegistry } from '../../test/support/registry';
import type { BenchRun } from '../lib/fixture';
import { berth, run as runCmd, type Build } from '../lib/proc';
import { spread, verdictOf, type Row } from '../lib/report';
import { pairedRatio, summarize } from '../lib/stats';

export const IMAGES_VS_SCRIPT = 0.85;
export const SIZES_MB = [50, 60, 70, 80, 90, 100];
const PER_IMAGE = 2;
const SLOTS = 2;
const RUN_SECONDS = 3;
const SET_CHILDREN = 50;

export interface ImagesSamples {
  attempts: number;
  images: number;
  berth: number[];
  script: number[];
  /** The set of 50 over one image: blob requests at the registry, and distinct blobs among them. */
  set: { children: number; blobRequests: number; distinctBlobs: number; ms: number };
}

function attemptSpec(name: string, image: string): string {
  return [
    'apiVersion: berth.dev/v1',
    'kind: Attempt',
    `metadata: {name: ${name}}`,
    'spec:',
    `  image: ${image}`,
    `  command: [sh, -c, 'sleep ${RUN_SECONDS}']`,
    '  network: {mode: none}',
    '',
  ].join('\n');
}

export async function removeAll(refs: readonly string[]): Promise<void> {
  for (const r of refs) await removeImage(r);
}

export async function berthRound(
  run: BenchRun,
  round: number,
  refs: readonly string[],
  env: NodeJS.ProcessEnv,
  origin = Date.now(),
  extra: readonly string[] = [],
  build?: Build,
): Promise<number> {
  const sb = await run.berthSandbox(`img${round}`);
  let i = 0;
  for (const ref of refs)
    for (let k = 0; k < PER_IMAGE; k++) await fs.writeFile(path.join(sb.specsDir, `a${i}.yaml`), attemptSpec(`a${String(i++).padStart(2, '0')}`, ref));
  const trace = process.env.BENCH_IMAGES_TRACE === '1';
  const r = await berth(
    [
      'reconcile',
      '--once',
      '--wait',
      '--timeout',
      '900',
      '--max-running',
      String(SLOTS),
      ...sb.globalArgs(trace ? 'info' : 'warn'),
      ...(trace ? ['--log-format', 'json'] : []),
      ...extra,
    ],
    { env, timeoutMs: 1_000_000, ...(build ? { build } : {}) },
  );
  if (trace) {
    const lines = r.stderr
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => {
        try {
          const j = JSON.parse(l) as Record<string, unknown>;
          const t = Date.parse(String(j.time ?? j.ts ?? j.timestamp ?? ''));
          return `${((t - origin) / 1000).toFixed(1)} ${String(j.msg ?? j.message ?? l).slice(0, 110)}`;
        } catch {
          return l.slice(0, 120);
        }
      });
    process.stderr.write(`images berth log: ${lines.join(' | ')}\n`);
  }
  const recs = await new StatusStore(sb.stateDir, sb.instance).loadAll();
  const ok = [...recs.values()].filter((s) => s.phase === 'Succeeded').length;
  if (ok !== refs.length * PER_IMAGE) throw new Error(`images: berth: ${ok} of ${refs.length * PER_IMAGE} attempts Succeeded\n${r.stderr.slice(-3000)}`);
  await berth(['clean', ...sb.globalArgs('warn')]);
  return r.ms;
}

export async function scriptRound(refs: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  const lines = refs.flatMap((r) => Array.from({ length: PER_IMAGE }, () => r)).join('\n');
  const script = `docker pull -q "$0" >/dev/null && docker run --rm --network none "$0" sh -c 'sleep ${RUN_SECONDS}'`;
  const r = await runCmd('xargs', ['-P', String(SLOTS), '-n', '1', 'sh', '-c', script], { input: `${lines}\n`, env, timeoutMs: 900_000 });
  return r.ms;
}

/**
 * BENCH_IMAGES_TRACE=1 (information): the round's timeline from the engine's own events, read back
 * with `docker events --since --until`: each image's pull (its end: the engine's `pull` event) and
 * each container's start and die, in seconds from the round's start, by image index.
 */
export function traceRound(who: string, refs: readonly string[]): { sinceMs: number; stop(): Promise<string> } {
  const sinceMs = Date.now();
  // followed live: the engine keeps only its last 256 events, and the machine is shared
  const child = spawn('docker', ['events', '--format', '{{json .}}', '--filter', 'type=image', '--filter', 'type=container'], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  let buf = '';
  child.stdout.on('data', (d: Buffer) => (buf += d.toString()));
  const idx = (ref: string): number => refs.findIndex((x) => ref === x || ref.startsWith(`${x.slice(0, x.lastIndexOf(':'))}@`));
  return {
    sinceMs,
    async stop() {
      await new Promise((r) => setTimeout(r, 500));
      child.kill();
      const lines: string[] = [];
      for (const l of buf.split('\n')) {
        if (!l.trim()) continue;
        const ev = JSON.parse(l) as { Type: string; Action: string; Actor: { ID: string; Attributes: Record<string, string> }; timeNano: number };
        const at = ((ev.timeNano / 1e6 - sinceMs) / 1000).toFixed(1);
        if (ev.Type === 'image' && ev.Action === 'pull') {
          const i = idx(ev.Actor.ID);
          if (i >= 0) lines.push(`${at} pulled img${i}`);
        } else if (ev.Type === 'container' && (ev.Action === 'start' || ev.Action === 'die' || ev.Action === 'create')) {
          const i = idx(ev.Actor.Attributes.image ?? '');
          if (i >= 0) lines.push(`${at} ${ev.Action} img${i} ${ev.Actor.ID.slice(0, 4)}`);
        }
      }
      return `images trace (${who}): ${lines.join(' | ')}`;
    },
  };
}

export async function imagesRounds(run: BenchRun, rounds: number, log: (m: string) => void): Promise<ImagesSamples> {
  const reg = await TestRegistry.start();
  const refs: string[] = [];
  const locals: string[] = [];
  const home = await run.dir('images-docker-config');
  try {
    log(`images: making ${SIZES_MB.length} images of ${SIZES_MB.join(', ')} MB and pushing them to a registry at ${reg.host}`);
    for (const [i, mb] of SIZES_MB.entries()) {
      const local = `berth-bench/${run.id}-img${i}:1`;
      locals.push(local);
      await makeTestImage(local, mb * 1024 * 1024);
      refs.push(await reg.push(local, `bench/img${i}:1`));
      await removeImage(local);
    }
    await fs.writeFile(path.join(home, 'config.json'), JSON.stringify({ auths: reg.authEntry() }));
    const env = { ...process.env, DOCKER_CONFIG: home };
    const out: ImagesSamples = {
      attempts: refs.length * PER_IMAGE,
      images: refs.length,
      berth: [],
      script: [],
      set: { children: SET_CHILDREN, blobRequests: 0, distinctBlobs: 0, ms: 0 },
    };
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? (['berth', 'script'] as const) : (['script', 'berth'] as const);
      for (const who of order) {
        await removeAll(refs);
        const trace = process.env.BENCH_IMAGES_TRACE === '1' ? traceRound(who, refs) : undefined;
        const ms = who === 'berth' ? await berthRound(run, round, refs, env, trace?.sinceMs) : await scriptRound(refs, env);
        out[who].push(ms);
        log(`images round ${round + 1}/${rounds}: ${who} ${(ms / 1000).toFixed(1)} s`);
        if (trace) log(await trace.stop());
      }
    }
    // a set of 50 over one image not on the engine: one pull
    await removeAll(refs);
    const one = refs[0] as string;
    const sb = await run.berthSandbox('imgset');
    await fs.writeFile(
      path.join(sb.specsDir, 'set.yaml'),
      [
        'apiVersion: berth.dev/v1',
        'kind: AttemptSet',
        'metadata: {name: one}',
        'spec:',
        '  matrix:',
        `    i: {range: [0, ${SET_CHILDREN}]}`,
        '  template:',
        `    image: ${one}`,
        "    command: [sh, -c, 'true']",
        '    network: {mode: none}',
        '',
      ].join('\n'),
    );
    const before = (await reg.requests(/^GET \/v2\/bench\/img0\/blobs\//)).length;
    const r = await berth(['reconcile', '--once', '--wait', '--timeout', '900', '--max-running', '8', ...sb.globalArgs('warn')], { env, timeoutMs: 1_000_000 });
    const blobs = (await reg.requests(/^GET \/v2\/bench\/img0\/blobs\//)).slice(before);
    out.set = { children: SET_CHILDREN, blobRequests: blobs.length, distinctBlobs: new Set(blobs).size, ms: r.ms };
    const recs = await new StatusStore(sb.stateDir, sb.instance).loadAll();
    const ok = [...recs.values()].filter((s) => s.phase === 'Succeeded').length;
    if (ok !== SET_CHILDREN) throw new Error(`images: the set: ${ok} of ${SET_CHILDREN} children Succeeded\n${r.stderr.slice(-3000)}`);
    await berth(['clean', ...sb.globalArgs('warn')]);
    log(`images: the set of ${SET_CHILDREN}: ${blobs.length} blob requests, ${out.set.distinctBlobs} distinct`);
    return out;
  } finally {
    await removeAll([...refs, ...locals]);
    await reg.stop();
  }
}

export function imagesRows(s: ImagesSamples, rows: Row[]): void {
  const r = pairedRatio(s.berth, s.script);
  rows.push({
    id: 'images-vs-script',
    workload: `Images from a registry: ${s.attempts} attempts over ${s.images} images of ${SIZES_MB[0]}-${SIZES_MB.at(-1)} MB not on the engine, ${SLOTS} slots, each ${RUN_SECONDS} s`,
    berth: spread(summarize(s.berth)),
    reference: `\`docker pull\` then \`docker run --rm\` per attempt, \`xargs -P ${SLOTS}\``,
    refValue: spread(summarize(s.script)),
    ratio: r,
    target: `≤ ${IMAGES_VS_SCRIPT}×`,
    verdict: verdictOf(r.median <= IMAGES_VS_SCRIPT),
    chart: { label: 'images fleet vs pull+run script', target: IMAGES_VS_SCRIPT },
  });
  rows.push({
    id: 'images-set-one-pull',
    workload: `Images from a registry: an AttemptSet of ${s.set.children} children over one image not on the engine`,
    berth: `${s.set.blobRequests} blob requests at the registry (${s.set.distinctBlobs} distinct), ${(s.set.ms / 1000).toFixed(1)} s`,
    reference: 'one pull: each blob fetched once',
    refValue: `${s.set.distinctBlobs} requests`,
    target: 'blob requests = distinct blobs',
    verdict: verdictOf(s.set.blobRequests === s.set.distinctBlobs && s.set.distinctBlobs > 0),
  });
}
