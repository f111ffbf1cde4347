/**
 * Statistics of a paired comparison, pure (`berth compare`, sets/compare.ts): the exact McNemar
 * test on the discordant pairs, and a percentile interval by a paired bootstrap over clusters
 * with a seeded generator (the same input gives the same interval).
 */
import { xoshiro128ss, type Xoshiro128State } from './prng';

/** ln C(n, k), summed as logs of ratios (no large factorial is formed). */
function logChoose(n: number, k: number): number {
  let s = 0;
  for (let j = 1; j <= k; j++) s += Math.log((n - k + j) / j);
  return s;
}

/** Up to this n, C(n, i) · i < 2^53 for every i < n/2: the running product below is of exact integers. */
const EXACT_N = 51;

/**
 * The exact McNemar test, two-sided: with b pairs that went one way and c the other, under no
 * change b follows Binomial(b + c, 1/2), and p = min(1, 2 · P(X <= min(b, c))). No discordant
 * pair: p = 1. Up to 51 discordant pairs the sum is of exact integers over a power of two (the
 * result is exact); beyond, from the log of the largest term down (relative error near 1e-13).
 */
export function mcnemarExact(b: number, c: number): number {
  if (!Number.isInteger(b) || !Number.isInteger(c) || b < 0 || c < 0) throw new RangeError(`McNemar needs counts >= 0 (got b=${b}, c=${c})`);
  const n = b + c;
  const k = Math.min(b, c);
  if (n === 0 || 2 * k >= n) return 1;
  if (n <= EXACT_N) {
    let term = 1; // C(n, 0)
    let sum = 1;
    for (let i = 1; i <= k; i++) {
      term = (term * (n - i + 1)) / i; // exact: C(n, i) · i < 2^53
      sum += term;
    }
    return Math.min(1, (2 * sum) / 2 ** n);
  }
  // P(X = k), then the terms below it relative to it, until they no longer count.
  const top = logChoose(n, k) - n * Math.LN2;
  let rel = 1;
  let sum = 1;
  for (let i = k; i >= 1; i--) {
    rel *= i / (n - i + 1);
    sum += rel;
    if (rel < sum * 1e-17) break;
  }
  return Math.min(1, 2 * Math.exp(top) * sum);
}

/** A cluster of paired samples (a task and its samples): how many, and the sum of after − before over them (each −1, 0 or 1). */
export interface Cluster {
  n: number;
  diff: number;
}

export interface BootstrapOptions {
  resamples: number;
  /** 0.95 for a 95% interval. */
  level: number;
  seed: Xoshiro128State;
}

/**
 * A percentile interval for the difference of paired pass rates, Σ diff / Σ n, by a bootstrap
 * over clusters: each resample draws as many clusters as there are, with replacement (from a
 * generator seeded with `seed` anew for each call, so the result depends only on the clusters
 * and their order), and takes Σ diff / Σ n of what it drew. The bounds are the resampled values
 * of nearest rank ⌈B·(1−level)/2⌉ and ⌈B·(1+level)/2⌉ among the B sorted (2,000 resamples at
 * 95%: the 50th and the 1,950th). With one sample per cluster this is the plain paired
 * bootstrap over pairs; with several (seeds of a task), resampling tasks keeps their samples
 * together, so samples that move together are not counted as independent evidence. Null
 * without clusters.
 */
export function bootstrapInterval(clusters: readonly Cluster[], o: BootstrapOptions): { lower: number; upper: number } | null {
  const k = clusters.length;
  if (k === 0) return null;
  const ns = Float64Array.from(clusters, (c) => c.n);
  const ds = Float64Array.from(clusters, (c) => c.diff);
  const rng = xoshiro128ss(o.seed);
  const b = o.resamples;
  const values = new Float64Array(b);
  const drawn = new Uint32Array(k);
  for (let r = 0; r < b; r++) {
    rng.fillBelow(drawn, k);
    let sd = 0;
    let sn = 0;
    for (let i = 0; i < k; i++) {
      const j = drawn[i] as number;
      sd += ds[j] as number;
      sn += ns[j] as number;
    }
    values[r] = sd / sn;
  }
  values.sort();
  const tail = (1 - o.level) / 2;
  // nearest rank, with a margin for 0.025 · 2000 not being exactly 50 in binary
  const rank = (q: number) => Math.min(b, Math.max(1, Math.ceil(q * b - 1e-9)));
  return { lower: values[rank(tail) - 1] as number, upper: values[rank(1 - tail) - 1] as number };
}
