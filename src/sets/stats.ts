/** Small statistics for summaries, pure. */

/**
 * Unbiased pass@k (Chen et al. 2021): the chance that at least one of k samples drawn without
 * replacement from n, of which c passed, passes: 1 − C(n−c, k) / C(n, k). Computed as the product
 * 1 − Π_{i=n−c+1..n} (1 − k/i), which never forms a large binomial coefficient.
 */
export function passAtK(n: number, c: number, k: number): number {
  if (!Number.isInteger(n) || !Number.isInteger(c) || !Number.isInteger(k) || n < 1 || k < 1 || k > n || c < 0 || c > n) {
    throw new RangeError(`pass@k needs integers 1 <= k <= n and 0 <= c <= n (got n=${n}, c=${c}, k=${k})`);
  }
  if (n - c < k) return 1;
  let prod = 1;
  for (let i = n - c + 1; i <= n; i++) prod *= 1 - k / i;
  return 1 - prod;
}

/**
 * pass^k: the chance that k samples drawn without replacement from n, of which c passed, all
 * pass: C(c, k) / C(n, k), computed as the product Π_{i=0..k−1} (c−i)/(n−i).
 */
export function passHatK(n: number, c: number, k: number): number {
  if (!Number.isInteger(n) || !Number.isInteger(c) || !Number.isInteger(k) || n < 1 || k < 1 || k > n || c < 0 || c > n) {
    throw new RangeError(`pass^k needs integers 1 <= k <= n and 0 <= c <= n (got n=${n}, c=${c}, k=${k})`);
  }
  let prod = 1;
  for (let i = 0; i < k; i++) prod *= (c - i) / (n - i);
  return Math.max(0, prod);
}

/** The mean of 0/1 outcomes and its standard error sqrt(p(1−p)/n); null for no outcomes. */
export function rateWithStderr(passed: number, n: number): { rate: number; stderr: number } | null {
  if (n === 0) return null;
  const p = passed / n;
  return { rate: p, stderr: Math.sqrt((p * (1 - p)) / n) };
}

/** The q-th percentile (0..100) by nearest rank; null for no values. */
export function percentile(values: readonly number[], q: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((q / 100) * sorted.length));
  return sorted[rank - 1] as number;
}

export function mean(values: readonly number[]): number | null {
  return values.length ? values.reduce((s, v) => s + v, 0) / values.length : null;
}
