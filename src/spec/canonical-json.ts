/**
 * Canonical JSON: object keys sorted (by UTF-16 code units) at every level, no whitespace,
 * arrays in order, undefined members dropped. Equal data gives equal text whatever the key order,
 * which is what a hash needs (`JSON.stringify` keeps insertion order, so it is not canonical).
 */

export function canonicalJson(value: unknown): string {
  return write(value, new Set());
}

function write(v: unknown, stack: Set<object>): string {
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
      if (stack.has(v)) throw new TypeError('canonicalJson: cyclic value');
      stack.add(v);
      let out: string;
      // Plain loops and string appends: this runs for every spec of every load.
      if (Array.isArray(v)) {
        out = '[';
        for (let i = 0; i < v.length; i++) {
          const x: unknown = v[i];
          out += (i ? ',' : '') + (x === undefined ? 'null' : write(x, stack));
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
          out += (first ? '' : ',') + JSON.stringify(k) + ':' + write(x, stack);
          first = false;
        }
        out += '}';
      }
      stack.delete(v);
      return out;
    }
    default:
      throw new TypeError(`canonicalJson: cannot encode ${typeof v}`);
  }
}
