/**
 * Field paths: segments (keys and indices) as used inside the loader, rendered for users as
 * `spec.volumes[1].mountPath`, and parsed from ajv's JSON-pointer `instancePath`.
 */

export type Segment = string | number;

const PLAIN_KEY = /^[A-Za-z_][A-Za-z0-9_-]*$/;

/** `['spec', 'volumes', 1, 'mountPath']` → `spec.volumes[1].mountPath`; odd keys are quoted: `labels["a.b/c"]`. */
export function formatPath(segs: readonly Segment[]): string {
  let out = '';
  for (const s of segs) {
    if (typeof s === 'number') out += `[${s}]`;
    else if (PLAIN_KEY.test(s)) out += out === '' ? s : `.${s}`;
    else out += `[${JSON.stringify(s)}]`;
  }
  return out;
}

/**
 * Splits a JSON pointer into segments. A segment is an index (number) when the value it
 * addresses lives in an array of `data`, so `/spec/volumes/1` and a map key "1" stay distinct.
 */
export function parsePointer(pointer: string, data: unknown): Segment[] {
  if (pointer === '') return [];
  const raw = pointer
    .slice(1)
    .split('/')
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  const segs: Segment[] = [];
  let cur: unknown = data;
  for (const part of raw) {
    if (Array.isArray(cur) && /^(0|[1-9][0-9]*)$/.test(part)) {
      const i = Number(part);
      segs.push(i);
      cur = cur[i];
    } else {
      segs.push(part);
      cur = isRecord(cur) && Object.prototype.hasOwnProperty.call(cur, part) ? cur[part] : undefined;
    }
  }
  return segs;
}

/** The value at `segs` inside plain data, or undefined. */
export function valueAt(data: unknown, segs: readonly Segment[]): unknown {
  let cur: unknown = data;
  for (const s of segs) {
    if (typeof s === 'number') cur = Array.isArray(cur) ? cur[s] : undefined;
    else cur = isRecord(cur) && Object.prototype.hasOwnProperty.call(cur, s) ? cur[s] : undefined;
    if (cur === undefined) return undefined;
  }
  return cur;
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
