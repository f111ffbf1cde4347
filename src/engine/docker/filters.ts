/** Engine list filters as the API wants them: `{"label": ["k=v", ...]}`, JSON-encoded. */
export function labelFilter(labelFilters: string[], extra: Record<string, string[]> = {}): string {
  return JSON.stringify({ ...extra, label: labelFilters });
}
