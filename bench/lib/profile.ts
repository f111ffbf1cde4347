/**
 * Reading a V8 CPU profile (`node --cpu-prof`): self time by function and by area (a package
 * under node_modules, a folder of berth's dist/, node's internals, GC, idle), so a MISS comes
 * with where the time went. Also a CLI: `node --import tsx bench/lib/profile.ts FILE.cpuprofile [N]`.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  file: string;
  totalMs: number;
  /** Samples not idle: percentages below are of this. */
  busyMs: number;
  byArea: { area: string; ms: number; pct: number }[];
  byFunction: { fn: string; ms: number; pct: number }[];
  /** Inclusive time of the top berth functions (dist/ or src/), callees included. */
  berthInclusive: { fn: string; ms: number; pct: number }[];
  /** Inclusive time by npm package (its code and everything it calls; module loading included). */
  packageInclusive: { area: string; ms: number; pct: number }[];
}

function area(url: string, fn: string): string {
  if (!url) {
    if (fn === '(garbage collector)') return 'GC';
    if (fn === '(idle)') return 'idle';
    if (fn === '(program)') return 'V8/native (program)';
    return `native ${fn || '(anonymous)'}`;
  }
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + '/node_modules/'.length).split('/');
    return `npm ${rest[0]?.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]}`;
  }
  if (url.startsWith('node:')) return `node ${url.slice(5).split('/')[0]}`;
  const m = /\/(dist|src)\/([^/]+)/.exec(url);
  if (m) return `berth ${m[2]?.replace(/\.js$|\.ts$/, '')}`;
  return url;
}

function label(cf: CallFrame): string {
  const file = cf.url ? `${path.basename(cf.url.replace(/^file:\/\//, ''))}:${cf.lineNumber + 1}` : '';
  const nm = cf.url.lastIndexOf('/node_modules/');
  const pkg = nm >= 0 ? cf.url.slice(nm + 14).split('/')[0] + '/' : '';
  return `${cf.functionName || '(anonymous)'}${file ? ` ${pkg}${file}` : ''}`;
}

/**
 * @param window only the samples between these offsets from the profile's end, in ms (e.g.
 *        `{ fromEndMs: 12000, toEndMs: 2000 }`: a 10 s window that ended 2 s before the process did).
 */
export function summarizeProfile(file: string, top = 12, window?: { fromEndMs: number; toEndMs: number }): ProfileSummary {
  const prof = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(prof.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<number, number>();
  let t = prof.startTime;
  const lo = window ? prof.endTime - window.fromEndMs * 1000 : -Infinity;
  const hi = window ? prof.endTime - window.toEndMs * 1000 : Infinity;
  for (let i = 0; i < prof.samples.length; i++) {
    t += prof.timeDeltas[i] ?? 0;
    if (t < lo || t > hi) continue;
    const id = prof.samples[i] as number;
    const dt = (prof.timeDeltas[i + 1] ?? 0) / 1000;
    self.set(id, (self.get(id) ?? 0) + dt);
  }
  const areas = new Map<string, number>();
  const fns = new Map<string, number>();
  const incl = new Map<string, number>();
  const pkgIncl = new Map<string, number>();
  let total = 0;
  let busy = 0;
  for (const [id, ms] of self) {
    const n = byId.get(id);
    if (!n) continue;
    total += ms;
    if (n.callFrame.functionName === '(idle)' && !n.callFrame.url) continue;
    busy += ms;
    const a = area(n.callFrame.url, n.callFrame.functionName);
    areas.set(a, (areas.get(a) ?? 0) + ms);
    const f = label(n.callFrame);
    fns.set(f, (fns.get(f) ?? 0) + ms);
    // Inclusive time of berth's own functions and of npm packages: each once per sample's stack.
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const cf = byId.get(cur)?.callFrame;
      if (cf?.url.includes('/node_modules/')) {
        const pk = area(cf.url, cf.functionName);
        if (!seen.has(pk)) {
          seen.add(pk);
          pkgIncl.set(pk, (pkgIncl.get(pk) ?? 0) + ms);
        }
      }
      if (!cf || !/\/(dist|src)\//.test(cf.url) || cf.url.includes('/node_modules/')) continue;
      const k = label(cf);
      if (seen.has(k)) continue;
      seen.add(k);
      incl.set(k, (incl.get(k) ?? 0) + ms);
    }
  }
  const rank = (m: Map<string, number>, key: 'area' | 'fn') =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, ms]) => ({ [key]: k, ms, pct: (ms / (busy || 1)) * 100 }));
  return {
    file,
    totalMs: total,
    busyMs: busy,
    byArea: rank(areas, 'area') as ProfileSummary['byArea'],
    byFunction: rank(fns, 'fn') as ProfileSummary['byFunction'],
    berthInclusive: rank(incl, 'fn') as ProfileSummary['berthInclusive'],
    packageInclusive: rank(pkgIncl, 'area') as ProfileSummary['packageInclusive'],
  };
}

export function renderProfile(title: string, s: ProfileSummary): string {
  const fmt = (ms: number, pct: number) => `${ms.toFixed(0)} ms (${pct.toFixed(0)}%)`;
  const out = [
    `#### ${title}`,
    '',
    `${path.basename(s.file)}: ${s.totalMs.toFixed(0)} ms sampled, ${s.busyMs.toFixed(0)} ms of it busy (percentages are of the busy time).`,
    '',
  ];
  out.push(
    '| self time by area | | self time by function | | inclusive: berth functions | | inclusive: npm packages | |',
    '|---|---:|---|---:|---|---:|---|---:|',
  );
  const n = Math.max(s.byArea.length, s.byFunction.length, s.berthInclusive.length, s.packageInclusive.length);
  const cell = (x: { ms: number; pct: number } | undefined, name: string | undefined, code: boolean) =>
    `${name ? (code ? `\`${name}\`` : name) : ''} | ${x ? fmt(x.ms, x.pct) : ''}`;
  for (let i = 0; i < n; i++) {
    const a = s.byArea[i];
    const f = s.byFunction[i];
    const b = s.berthInclusive[i];
    const p = s.packageInclusive[i];
    out.push(`| ${cell(a, a?.area, false)} | ${cell(f, f?.fn, true)} | ${cell(b, b?.fn, true)} | ${cell(p, p?.area, false)} |`);
  }
  return out.join('\n') + '\n';
}

if (require.main === module) {
  const [file, n, from, to] = process.argv.slice(2);
  if (!file) {
    process.stderr.write('usage: node --import tsx bench/lib/profile.ts FILE.cpuprofile [TOP [FROM_END_MS TO_END_MS]]\n');
    process.exit(2);
  }
  const window = from !== undefined ? { fromEndMs: Number(from), toEndMs: Number(to ?? 0) } : undefined;
  process.stdout.write(renderProfile(path.basename(file), summarizeProfile(file, Number(n ?? 15), window)));
}
