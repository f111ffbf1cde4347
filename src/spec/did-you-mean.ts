/**
 * "Did you mean" for unknown fields: the closest known name by edit distance (case-insensitive
 * matches first), or undefined when nothing is close enough to be a plausible typo.
 */

export function didYouMean(input: string, candidates: readonly string[]): string | undefined {
  const lower = input.toLowerCase();
  const exactCase = candidates.find((c) => c.toLowerCase() === lower);
  if (exactCase !== undefined) return exactCase;
  const maxDist = Math.max(1, Math.min(3, Math.floor(input.length / 3)));
  let best: string | undefined;
  let bestDist = Infinity;
  for (const c of candidates) {
    if (Math.abs(c.length - input.length) > maxDist) continue;
    const d = editDistance(lower, c.toLowerCase());
    if (d <= maxDist && d < bestDist) {
      best = c;
      bestDist = d;
    }
  }
  return best;
}

/** Damerau–Levenshtein distance (optimal string alignment: adjacent swaps cost 1). */
export function editDistance(a: string, b: string): number {
  const m = a.length;
  const n = b.length;
  let prev2: number[] = new Array<number>(n + 1).fill(0);
  let prev: number[] = Array.from({ length: n + 1 }, (_, j) => j);
  for (let i = 1; i <= m; i++) {
    const cur: number[] = new Array<number>(n + 1).fill(0);
    cur[0] = i;
    for (let j = 1; j <= n; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min((prev[j] as number) + 1, (cur[j - 1] as number) + 1, (prev[j - 1] as number) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        v = Math.min(v, (prev2[j - 2] as number) + 1);
      }
      cur[j] = v;
    }
    prev2 = prev;
    prev = cur;
  }
  return prev[n] as number;
}
