/** Small statistics over samples: median, quantiles (linear interpolation), spread. */

export interface Summary {
  n: number;
  median: number;
  min: number;
  max: number;
  q1: number;
  q3: number;
  p95: number;
  mean: number;
}

export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  const a = sorted[lo] as number;
  const b = sorted[hi] as number;
  return a + (b - a) * (pos - lo);
}

export function summarize(samples: readonly number[]): Summary {
  const s = [...samples].sort((a, b) => a - b);
  return {
    n: s.length,
    median: quantile(s, 0.5),
    min: s[0] ?? NaN,
    max: s[s.length - 1] ?? NaN,
    q1: quantile(s, 0.25),
    q3: quantile(s, 0.75),
    p95: quantile(s, 0.95),
    mean: s.reduce((x, y) => x + y, 0) / (s.length || 1),
  };
}

/**
 * Ratio of two contenders measured in the same rounds: the median of the per-round ratios
 * (round i of A over round i of B), with their min and max. Pairing by round cancels the drift
 * of a noisy machine between rounds better than a ratio of medians would.
 */
export function pairedRatio(a: readonly number[], b: readonly number[]): Summary {
  const n = Math.min(a.length, b.length);
  const r: number[] = [];
  for (let i = 0; i < n; i++) r.push((a[i] as number) / (b[i] as number));
  return summarize(r);
}

export function fmtMs(ms: number): string {
  if (!Number.isFinite(ms)) return '—';
  if (ms >= 10_000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms >= 1000) return `${(ms / 1000).toFixed(2)} s`;
  if (ms >= 100) return `${ms.toFixed(0)} ms`;
  if (ms >= 10) return `${ms.toFixed(1)} ms`;
  return `${ms.toFixed(2)} ms`;
}

export function fmtRatio(r: number): string {
  return Number.isFinite(r) ? `${r.toFixed(2)}×` : '—';
}
