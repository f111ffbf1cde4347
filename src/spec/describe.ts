/**
 * Short, human descriptions of values and JSON types for error messages. Long strings are cut;
 * nothing here is ever passed a secret value (specs name secrets, they never hold them).
 */

export function describeValue(v: unknown): string {
  if (v === null || v === undefined) return 'nothing';
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v);
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  if (Array.isArray(v)) return 'a list';
  return 'a mapping';
}

export function describeType(t: unknown): string {
  switch (t) {
    case 'string':
      return 'a string';
    case 'number':
      return 'a number';
    case 'integer':
      return 'a whole number';
    case 'boolean':
      return 'true or false';
    case 'object':
      return 'a mapping';
    case 'array':
      return 'a list';
    case 'null':
      return 'empty';
    default:
      return String(t);
  }
}

/** Whether a value has JSON Schema type `t`. */
export function hasType(v: unknown, t: unknown): boolean {
  switch (t) {
    case 'string':
      return typeof v === 'string';
    case 'number':
      return typeof v === 'number' && Number.isFinite(v);
    case 'integer':
      return typeof v === 'number' && Number.isInteger(v);
    case 'boolean':
      return typeof v === 'boolean';
    case 'object':
      return typeof v === 'object' && v !== null && !Array.isArray(v);
    case 'array':
      return Array.isArray(v);
    case 'null':
      return v === null;
    default:
      return false;
  }
}

/** `[a, b, c]` → `a, b or c`. */
export function orList(items: readonly string[]): string {
  if (items.length <= 1) return items.join('');
  return `${items.slice(0, -1).join(', ')} or ${items[items.length - 1]}`;
}
