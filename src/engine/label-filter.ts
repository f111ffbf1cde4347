/** The engine's label filters (`key=value`, or `key` for any value), applied as a label-filtered list would. */
import type { Labels } from './types';

/** Do `labels` satisfy every `key` / `key=value` filter? */
export function matchesLabels(labels: Labels, filters: readonly string[]): boolean {
  return filters.every((f) => {
    const eq = f.indexOf('=');
    if (eq < 0) return Object.prototype.hasOwnProperty.call(labels, f);
    return labels[f.slice(0, eq)] === f.slice(eq + 1);
  });
}
