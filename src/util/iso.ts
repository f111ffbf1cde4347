/** A time (ms since the epoch) as the records write it: ISO 8601, UTC. */
export const iso = (ms: number): string => new Date(ms).toISOString();
