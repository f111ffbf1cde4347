/**
 * What changed between two specs of an attempt, field by field (pure): the form compared is the
 * hashed one (hash.ts `hashedSpec`: exactly the fields whose change replaces the attempt), so
 * every change that gave a new spec hash shows, and nothing that did not. Secrets appear by name
 * only: where a secret's value comes from is kept as a short digest, so a changed source shows as
 * changed without being named. `plan` prints the changes of each replace (Terraform's `~ x: a -> b`).
 */
import type { NormalizedAttempt } from './types';
import { hashedSpec, sha256Hex } from './hash';

/** One field that changed: `from` absent when it was added, `to` absent when it was removed. */
export interface SpecChange {
  path: string;
  from?: unknown;
  to?: unknown;
}

/** The form kept of a run's spec and compared: the hashed form, each secret as its name, its source kind and a digest of where it comes from. */
export function diffForm(spec: NormalizedAttempt): Record<string, unknown> {
  const form = hashedSpec(spec);
  const secrets = form.secrets as ({ name: string } & Record<string, unknown>)[] | undefined;
  if (!secrets) return form;
  return {
    ...form,
    secrets: secrets.map(({ name, source, ...rest }) => ({ name, source, from: sha256Hex(JSON.stringify(rest)).slice(0, 12) })),
  };
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const named = (v: unknown): v is ({ name: string } & Record<string, unknown>)[] =>
  Array.isArray(v) && v.every((x) => isObject(x) && typeof x.name === 'string');
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** The changes from `before` to `after`, in path order. */
export function diffSpecs(before: unknown, after: unknown, path = 'spec'): SpecChange[] {
  if (same(before, after)) return [];
  if (before === undefined) return [{ path, to: after }];
  if (after === undefined) return [{ path, from: before }];
  if (isObject(before) && isObject(after)) {
    const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
    return keys.flatMap((k) => diffSpecs(before[k], after[k], `${path}.${k}`));
  }
  // lists of named items (secrets, volumes, sidecars): by name, as their order means nothing
  if (named(before) && named(after)) {
    const a = new Map(before.map((x) => [x.name, x]));
    const b = new Map(after.map((x) => [x.name, x]));
    const names = [...new Set([...a.keys(), ...b.keys()])].sort();
    return names.flatMap((n) => {
      const x = a.get(n);
      const y = b.get(n);
      // a secret by name only
      if (path.endsWith('.secrets'))
        return x === undefined
          ? [{ path: `${path}[${n}]`, to: 'added' }]
          : y === undefined
            ? [{ path: `${path}[${n}]`, from: 'removed' }]
            : same(x, y)
              ? []
              : [{ path: `${path}[${n}]`, from: '(its source)', to: '(another source)' }];
      return diffSpecs(x, y, `${path}[${n}]`);
    });
  }
  return [{ path, from: before, to: after }];
}

/** At most this many characters of a value are shown. */
const SHOWN = 120;

function show(v: unknown): string {
  const text = JSON.stringify(v) ?? String(v);
  return text.length > SHOWN ? `${text.slice(0, SHOWN - 1)}…` : text;
}

/** One change as `plan` prints it: `~ spec.command: ["sh","-c","x2"] -> ["sh","-c","x3"]`, `+ spec.env.A: "1"`, `- spec.env.B: "2"`. */
export function changeText(c: SpecChange): string {
  if (c.path.includes('.secrets[')) {
    if (c.from === 'removed') return `- ${c.path}`;
    if (c.to === 'added') return `+ ${c.path}`;
    return `~ ${c.path}: its source changed`;
  }
  if (!('from' in c)) return `+ ${c.path}: ${show(c.to)}`;
  if (!('to' in c)) return `- ${c.path}: ${show(c.from)}`;
  return `~ ${c.path}: ${show(c.from)} -> ${show(c.to)}`;
}
