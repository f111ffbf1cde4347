/**
 * Memory quantities, Kubernetes rules: a decimal number with an optional suffix, binary
 * `Ki Mi Gi Ti Pi Ei` (powers of 1024) or decimal `k M G T P E` (powers of 1000), or a plain
 * integer of bytes. Fractions round up to whole bytes; arithmetic is exact (BigInt).
 */

/** Smallest memory limit berth accepts (Docker refuses less than a few MiB). */
export const MIN_MEMORY_BYTES = 6 * 1024 * 1024; // the engine refuses less (6MB)
/** Largest memory limit berth accepts (1Pi); keeps byte counts exact in a JS number. */
export const MAX_MEMORY_BYTES = 1024 ** 5;

const UNITS: Record<string, bigint> = {
  '': 1n,
  k: 1000n,
  M: 1000n ** 2n,
  G: 1000n ** 3n,
  T: 1000n ** 4n,
  P: 1000n ** 5n,
  E: 1000n ** 6n,
  Ki: 1024n,
  Mi: 1024n ** 2n,
  Gi: 1024n ** 3n,
  Ti: 1024n ** 4n,
  Pi: 1024n ** 5n,
  Ei: 1024n ** 6n,
};

export type QuantityResult = { ok: true; bytes: number } | { ok: false; message: string };

/** Parses a memory quantity (`512Mi`, `1G`, `1.5Gi`, 268435456) and checks its range. */
export function parseMemory(input: string | number): QuantityResult {
  const bytes = toBytes(input);
  if (typeof bytes === 'string') return { ok: false, message: bytes };
  if (bytes < BigInt(MIN_MEMORY_BYTES)) {
    return { ok: false, message: `must be at least 6Mi (got ${show(input)} = ${bytes} bytes)` };
  }
  if (bytes > BigInt(MAX_MEMORY_BYTES)) return { ok: false, message: `must be at most 1Pi (got ${show(input)})` };
  return { ok: true, bytes: Number(bytes) };
}

/** Largest byte count berth accepts for a size that is not memory (1Pi): exact in a JS number. */
export const MAX_SIZE_BYTES = 1024 ** 5;

/** Parses a size quantity (`256Mi`, `1G`, 1048576): at least one byte, at most 1Pi. */
export function parseSize(input: string | number): QuantityResult {
  const bytes = toBytes(input);
  if (typeof bytes === 'string') return { ok: false, message: bytes };
  if (bytes > BigInt(MAX_SIZE_BYTES)) return { ok: false, message: `must be at most 1Pi (got ${show(input)})` };
  return { ok: true, bytes: Number(bytes) };
}

/** Smallest disk limit berth accepts (resources.disk). */
export const MIN_DISK_BYTES = 1024 * 1024;

/** Parses a disk quantity (`2Gi`, `500M`, bytes): at least 1Mi, at most 1Pi. */
export function parseDisk(input: string | number): QuantityResult {
  const parsed = parseSize(input);
  if (parsed.ok && parsed.bytes < MIN_DISK_BYTES) return { ok: false, message: `must be at least 1Mi (got ${show(input)} = ${parsed.bytes} bytes)` };
  return parsed;
}

/** Bytes, or a message saying why `input` is not a quantity. No range check. */
export function toBytes(input: string | number): bigint | string {
  if (typeof input === 'number') {
    if (!Number.isSafeInteger(input) || input < 1) return `must be a positive whole number of bytes (got ${input})`;
    return BigInt(input);
  }
  const m = /^([0-9]+)(?:\.([0-9]+))?([A-Za-z]*)$/.exec(input);
  if (!m) return `must be a quantity such as 512Mi, 1Gi, 1G or 500M (got ${show(input)})`;
  const [, whole = '', frac = '', unit = ''] = m;
  const mult = UNITS[unit];
  if (mult === undefined) return `unknown unit "${unit}" in ${show(input)}: ${unitHint(unit)}`;
  if (whole.length + frac.length > 30) return `must be a quantity such as 512Mi (got a number that long)`;
  const scale = 10n ** BigInt(frac.length);
  const scaled = (BigInt(whole) * scale + BigInt(frac === '' ? '0' : frac)) * mult;
  const bytes = (scaled + scale - 1n) / scale; // round up to whole bytes
  if (bytes < 1n) return `must be more than 0 bytes (got ${show(input)})`;
  return bytes;
}

function unitHint(unit: string): string {
  if (unit === 'K') return 'use k (1000) or Ki (1024)';
  if (unit === 'm') return '"m" would mean 1/1000 of a byte; use Mi (1024²) or M (1000²)';
  if (/^[kmgtpe](i|ib|b)?$/i.test(unit)) {
    const base = unit.charAt(0).toUpperCase();
    return `use ${base === 'K' ? 'Ki' : `${base}i`} (1024-based) or ${base === 'K' ? 'k' : base} (1000-based)`;
  }
  return 'use one of Ki Mi Gi Ti Pi Ei (1024) or k M G T P E (1000)';
}

function show(input: string | number): string {
  return typeof input === 'number' ? String(input) : JSON.stringify(input.length > 40 ? `${input.slice(0, 40)}…` : input);
}

/**
 * A size given on the command line or in the environment, in the one grammar berth reads sizes
 * in (the spec's: `64Ki`, `2Gi`, `500M`, a plain number of bytes); `0` where `min` allows it.
 */
export function parseByteSize(text: string, min = 0): QuantityResult {
  const t = text.trim();
  if (/^[0-9]+$/.test(t)) {
    const n = Number(t);
    if (!Number.isSafeInteger(n)) return { ok: false, message: `must be at most 1Pi (got ${show(t)})` };
    return n < min ? { ok: false, message: `must be at least ${min} bytes (got ${n})` } : { ok: true, bytes: n };
  }
  const parsed = parseSize(t);
  if (parsed.ok && parsed.bytes < min) return { ok: false, message: `must be at least ${min} bytes (got ${show(t)} = ${parsed.bytes} bytes)` };
  return parsed;
}
