/**
 * The names commands take, as kubectl takes them: a bare attempt name, `attempt/NAME`, or
 * `set/NAME` (also `attemptset/NAME`), which stands for the AttemptSet's children in expansion
 * order. So what `get -o name` prints is what every command reads (`berth get -o name | xargs
 * berth rerun`). Pure: parsing is one step (a kind berth does not know is a usage error), and
 * expanding against what exists another (a name that does not exist is an error that says what
 * does). The CLI loads what exists (commands/resolve.ts).
 */
import { didYouMean } from '../spec/did-you-mean';

export type RefKind = 'attempt' | 'set';

export interface Ref {
  kind: RefKind;
  name: string;
  /** As typed (`set/swe`, `x`): errors quote it. */
  text: string;
  /** The kind was written out (`attempt/x`), not implied (`x`). */
  explicit: boolean;
}

/** The prefixes berth reads, kubectl-style: singular, plural, any case. */
const KINDS: Record<string, RefKind> = {
  attempt: 'attempt',
  attempts: 'attempt',
  set: 'set',
  sets: 'set',
  attemptset: 'set',
  attemptsets: 'set',
};

export const NAME_FORMS = 'an attempt name, attempt/NAME, or set/NAME (the attempts of an AttemptSet)';

/** Each argument as a Ref, or the usage problem of the first that is none. `kind` is what a bare name is. */
export function parseRefs(args: readonly string[], bare: RefKind = 'attempt'): Ref[] | { usage: string } {
  const refs: Ref[] = [];
  for (const text of args) {
    const slash = text.indexOf('/');
    if (slash < 0) {
      if (!text) return { usage: 'an empty name: give ' + NAME_FORMS };
      refs.push({ kind: bare, name: text, text, explicit: false });
      continue;
    }
    const kind = KINDS[text.slice(0, slash).toLowerCase()];
    const name = text.slice(slash + 1);
    if (!kind) return { usage: `${JSON.stringify(text)}: berth has no kind ${JSON.stringify(text.slice(0, slash))}: give ${NAME_FORMS}` };
    if (!name || name.includes('/')) return { usage: `${JSON.stringify(text)}: no name after ${text.slice(0, slash)}/; give ${NAME_FORMS}` };
    refs.push({ kind, name, text, explicit: true });
  }
  return refs;
}

/** What exists: the instance's attempts (specs and records) and the AttemptSets of the specs. */
export interface Known {
  attempts: ReadonlySet<string>;
  /** Set name → its children, in expansion order. */
  sets: ReadonlyMap<string, readonly string[]>;
  /** The instance, named in "not found" errors. */
  instance: string;
}

export interface Expanded {
  /** Attempt names, each once, in the order given (a set's children in its expansion order). */
  names: string[];
  /** One message per reference that names nothing (without the `berth: ` prefix). */
  missing: string[];
}

/** How many names a "not found" message lists before it only counts them. */
const LISTED = 5;

function some(names: readonly string[]): string {
  return names.length <= LISTED ? names.join(', ') : `${names.slice(0, LISTED).join(', ')}, ... (${names.length})`;
}

function attemptMissing(ref: Ref, known: Known): string {
  const head = `attempt ${JSON.stringify(ref.name)} not found`;
  const all = [...known.attempts].sort();
  const set = known.sets.get(ref.name);
  if (set) return `${head}: set/${ref.name} names the ${set.length} attempts of AttemptSet ${ref.name}`;
  const near = didYouMean(ref.name, all);
  if (near !== undefined) return `${head} (did you mean ${JSON.stringify(near)}?)`;
  if (!all.length) return `${head}: instance ${JSON.stringify(known.instance)} has no attempts (check --specs, --state and --instance)`;
  const count = `${all.length} attempt${all.length === 1 ? '' : 's'}`;
  return all.length <= LISTED
    ? `${head}: instance ${JSON.stringify(known.instance)} has ${count}: ${all.join(', ')}`
    : `${head}: instance ${JSON.stringify(known.instance)} has ${count} (berth get lists them)`;
}

function setMissing(ref: Ref, known: Known): string {
  const head = `AttemptSet ${JSON.stringify(ref.name)} not found`;
  const all = [...known.sets.keys()].sort();
  const near = didYouMean(ref.name, all);
  if (near !== undefined) return `${head} (did you mean set/${near}?)`;
  if (!all.length) return `${head}: the specs declare no AttemptSet (check --specs)`;
  return `${head}: the AttemptSets are ${some(all)}`;
}

/** The attempt names `refs` stand for, and a message for each that stands for none. */
export function expandRefs(refs: readonly Ref[], known: Known): Expanded {
  const names: string[] = [];
  const seen = new Set<string>();
  const missing: string[] = [];
  const add = (n: string) => {
    if (seen.has(n)) return;
    seen.add(n);
    names.push(n);
  };
  for (const ref of refs) {
    if (ref.kind === 'attempt') {
      if (known.attempts.has(ref.name)) add(ref.name);
      else missing.push(attemptMissing(ref, known));
      continue;
    }
    const children = known.sets.get(ref.name);
    if (!children) missing.push(setMissing(ref, known));
    else if (!children.length)
      missing.push(`AttemptSet ${JSON.stringify(ref.name)} has no attempts: its matrix could not be expanded (berth validate says why)`);
    else children.forEach(add);
  }
  return { names, missing };
}

/**
 * Set names for the commands that take sets (`get --sets`, `summary`, `report`): bare, or
 * `set/NAME` as `get --sets -o name` prints it; an attempt is a usage problem there.
 */
export function setNames(args: readonly string[]): string[] | { usage: string } {
  const refs = parseRefs(args, 'set');
  if (!Array.isArray(refs)) return refs;
  const attempt = refs.find((r) => r.kind === 'attempt');
  if (attempt) return { usage: `${JSON.stringify(attempt.text)} is an attempt: this command takes AttemptSets (a name, or set/NAME)` };
  return refs.map((r) => r.name);
}
