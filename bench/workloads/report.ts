/**
 * Workload: the fleet report of 1,000 attempts (synthetic records: one set of 4 models × 25 tasks
 * × 10 seeds with every outcome, times spread over an hour under --max-running 16). Measures the
 * page's size, the time to make it (data + render, in-process), and, in Debian's headless
 * chromium (test/support/browser.ts; fresh profile), the first paint of the file opened from
 * disk (the `first-contentful-paint` entry: from navigation start) against the same browser's
 * first paint of a minimal page, alternating (the order rotates every round): on a loaded machine
 * even the minimal page paints late, and the ratio says what the report itself costs.
 */
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { buildReport } from '../../src/report/model';
import { renderReport } from '../../src/report/render';
import { summarize, type SetChild } from '../../src/sets/summary';
import type { LoadedSpec, SetPolicy } from '../../src/spec/types';
import type { AttemptStatus } from '../../src/status/types';
import { launchBrowser } from '../../test/support/browser';

export interface ReportSamples {
  attempts: number;
  bytes: number;
  buildMs: number[];
  firstPaintMs: number[];
  domContentLoadedMs: number[];
  /** The same browser's first paint of a minimal page, in the same rounds. */
  minimalFirstPaintMs: number[];
}

const ROOT = '/bench/results-root';

/** 1,000 children and their records, deterministic (`shape`: models, tasks and seeds; the first 2% of them still running unless `finished`). */
export function syntheticFleet(
  shape: { models: string[]; tasks: number; seeds: number; finished?: boolean } = {
    models: ['gpt-x', 'claude-y', 'llama-z', 'mistral-w'],
    tasks: 25,
    seeds: 10,
  },
): { sets: Map<string, { policy: SetPolicy; children: SetChild[] }>; statuses: Map<string, AttemptStatus> } {
  const total = shape.models.length * shape.tasks * shape.seeds;
  const policy: SetPolicy = {
    name: 'swe-bench-lite',
    axes: ['model', 'task', 'seed'],
    maxParallel: null,
    failFast: false,
    maxFailed: null,
    infra: [],
    score: { file: 'score.json', pass: 1 },
    source: { file: 'swe.yaml', line: 1, col: 1 },
  };
  const children: SetChild[] = [];
  const statuses = new Map<string, AttemptStatus>();
  const t0 = Date.parse('2026-01-01T00:00:00Z');
  const iso = (ms: number) => new Date(ms).toISOString();
  let i = 0;
  for (const model of shape.models) {
    for (let t = 0; t < shape.tasks; t++) {
      for (let seed = 0; seed < shape.seeds; seed++, i++) {
        const name = `swe-bench-lite-${model}-${seed}-task${t}`.replace(/[^a-z0-9-]/g, '');
        const coords = { model, task: `django__django-${11000 + t * 37}`, seed: String(seed) };
        const loaded = {
          spec: { name, labels: { suite: 'swe', model }, retries: 0 },
          hash: `h${i}`,
          set: { set: policy, coords, index: i },
        } as unknown as LoadedSpec;
        children.push({ name, coords, loaded });
        // 16 slots, each run 20-200 s: start times follow the slots.
        const created = t0;
        const slotStart = t0 + Math.floor(i / 16) * 60_000 + (i % 16) * 900;
        const run = 20_000 + ((i * 7919) % 180_000);
        const r = (i * 31) % 100;
        const phase: AttemptStatus['phase'] = !shape.finished && i >= total * 0.98 ? 'Running' : r < 4 ? 'TimedOut' : r < 7 ? 'Failed' : 'Succeeded';
        statuses.set(name, {
          name,
          instance: 'bench',
          phase,
          ...(phase === 'Failed' ? { reason: 'OOMKilled', exitCode: 137, message: 'the kernel killed the main process: out of memory (limit 2 GiB)' } : {}),
          ...(phase === 'TimedOut' ? { reason: 'DeadlineExceeded', exitCode: 137 } : {}),
          ...(phase === 'Succeeded' ? { exitCode: 0, score: (t + seed + model.length) % 3 === 0 ? 0 : 1 } : {}),
          specHash: `h${i}`,
          run: 1,
          retriesUsed: 0,
          createdAt: iso(created),
          provisionedAt: iso(slotStart),
          startedAt: iso(slotStart + 1500),
          ...(phase !== 'Running' ? { finishedAt: iso(slotStart + 1500 + run) } : {}),
          resultsDir: path.join(ROOT, 'swe', name, 'run-1', 'results'),
          history: [],
          updatedAt: iso(slotStart),
        });
      }
    }
  }
  return { sets: new Map([[policy.name, { policy, children }]]), statuses };
}

function makePage(now: number): { html: string; attempts: number } {
  const f = syntheticFleet();
  const s = summarize(f.sets, f.statuses, now);
  const childLabels = new Map([...(f.sets.values().next().value?.children ?? [])].map((c) => [c.name, c.loaded?.spec.labels ?? {}] as const));
  const d = buildReport({
    sets: s.sets,
    childLabels,
    plain: [],
    statuses: f.statuses,
    now,
    instance: 'bench',
    maxRunning: 16,
    resultsRoot: ROOT,
    linkBase: ROOT,
    mode: 'file',
  });
  return { html: renderReport(d), attempts: d.attempts.length };
}

export async function reportBench(rounds: number, log: (m: string) => void): Promise<ReportSamples> {
  const now = Date.parse('2026-01-01T01:10:00Z');
  const buildMs: number[] = [];
  let page = makePage(now);
  for (let r = 0; r < rounds; r++) {
    const t = performance.now();
    page = makePage(now);
    buildMs.push(performance.now() - t);
  }
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-bench-report-'));
  const file = path.join(dir, 'report.html');
  const minimal = path.join(dir, 'minimal.html');
  await fs.writeFile(file, page.html);
  await fs.writeFile(
    minimal,
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>minimal</title></head><body><h1>minimal</h1><p>A page with one heading and one line.</p></body></html>\n',
  );
  const bytes = Buffer.byteLength(page.html);
  log(`report of ${page.attempts} attempts: ${(bytes / 1024).toFixed(0)} KiB; opening it in chromium ${rounds} times`);
  const firstPaintMs: number[] = [];
  const domContentLoadedMs: number[] = [];
  const minimalFirstPaintMs: number[] = [];
  const browser = await launchBrowser();
  const paintOf = async (p: Awaited<ReturnType<typeof browser.context.newPage>>): Promise<number> =>
    (await p.evaluate(`new Promise((resolve) => {
        const pick = () => performance.getEntriesByName('first-contentful-paint')[0];
        const e = pick();
        if (e) return resolve(e.startTime);
        new PerformanceObserver(() => { const x = pick(); if (x) resolve(x.startTime); }).observe({ type: 'paint', buffered: true });
      })`)) as number;
  const minimalRound = async () => {
    const p = await browser.context.newPage();
    await p.goto(pathToFileURL(minimal).href, { waitUntil: 'load' });
    minimalFirstPaintMs.push(await paintOf(p));
    await p.close();
  };
  try {
    for (let r = 0; r < rounds; r++) {
      if (r % 2 === 0) await minimalRound();
      // A new page each round, the file read from disk each time.
      const p = await browser.context.newPage();
      const errors: string[] = [];
      p.on('console', (m) => {
        if (m.type() === 'error') errors.push(m.text());
      });
      p.on('pageerror', (e) => errors.push(e.message));
      await p.goto(pathToFileURL(file).href, { waitUntil: 'load' });
      const fcp = await paintOf(p);
      const dcl = (await p.evaluate(`performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd`)) as number;
      const shown = (await p.textContent('#shown')) ?? '';
      if (errors.length) throw new Error(`the report page logged errors: ${errors.join('; ')}`);
      if (!shown.startsWith(`${page.attempts} of ${page.attempts} attempts`))
        throw new Error(`the report page's script did not run to the end (it shows ${JSON.stringify(shown)})`);
      firstPaintMs.push(fcp);
      domContentLoadedMs.push(dcl);
      await p.close();
      if (r % 2 === 1) await minimalRound();
    }
  } finally {
    await browser.close();
    await fs.rm(dir, { recursive: true, force: true });
  }
  return { attempts: page.attempts, bytes, buildMs, firstPaintMs, domContentLoadedMs, minimalFirstPaintMs };
}
