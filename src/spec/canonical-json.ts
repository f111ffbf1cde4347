/**
 * Canonical JSON: object keys sorted (by UTF-16 code units) at every level, no whitespace,
 * arrays in order, undefined members dropped. Equal data gives equal text whatever the key order,
 * which is what a hash needs (`JSON.stringify` keeps insertion order, so it is not canonical).
 */

/** Deeper than any spec: a value nested this deep is taken for a cycle (a cheap check, no set of visited objects). */
const MAX_DEPTH = 1000;
/** Keys JSON.stringify writes as they are, between quotes (most keys of a spec). */
const PLAIN_KEY = /^[A-Za-z0-9_./-]*$/;

export function canonicalJson(value: unknown): string {
  return write(value, 0);
}

function write(v: unknown, depth: number): string {
  if (v === null) return 'null';
  switch (typeof v) {
    case 'string':
      return JSON.stringify(v);
    case 'number':
      if (!Number.isFinite(v)) throw new TypeError(`canonicalJson: non-finite number ${v}`);
      return JSON.stringify(v);
    case 'boolean':
      return v ? 'true' : 'false';
    case 'bigint':
      return v.toString();
    case 'object': {
      if (depth >= MAX_DEPTH) throw new TypeError(`canonicalJson: cyclic value (or nested deeper than ${MAX_DEPTH})`);
      let out: string;
      // Plain loops and string appends: this runs for every spec of every load.
      if (Array.isArray(v)) {
        out = '[';
        for (let i = 0; i < v.length; i++) {
          const x: unknown = v[i];
          out += (i ? ',' : '') + (x === undefined ? 'null' : write(x, depth + 1));
        }
        out += ']';
      } else {
        const rec = v as Record<string, unknown>;
        const keys = Object.keys(rec).sort();
        out = '{';
        let first = true;
        for (const k of keys) {
          const x = rec[k];
          if (x === undefined) continue;
          out += (first ? '' : ',') + (PLAIN_KEY.test(k) ? `"${k}":` : `${JSON.stringify(k)}:`) + write(x, depth + 1);
          first = false;
        }
        out += '}';
      }
      return out;
    }
    default:
      throw new TypeError(`canonicalJson: cannot encode ${typeof v}`);
  }
}
