/** A plan as text (for `berth plan`, logs and golden tests) and as JSON-able data. */
import { changeText } from '../spec/spec-diff';
import type { Operation, Plan } from './types';
import { plural } from '../util/plural';

const SIGN: Record<Operation['type'], string> = {
  'create-volume': '+',
  'create-network': '+',
  'begin-run': '~',
  'create-container': '+',
  'copy-in': '+',
  'record-copied': '~',
  'create-sidecar': '+',
  'connect-sidecar': '+',
  'copy-in-sidecar': '+',
  'start-sidecar': '>',
  'ready-sidecar': '?',
  start: '>',
  'attest-start': '?',
  attest: '?',
  adopt: '=',
  stop: '!',
  finish: '*',
  harvest: '*',
  'remove-container': '-',
  'remove-network': '-',
  'remove-volume': '-',
  record: '~',
  forget: '-',
  'begin-grade': '~',
  'create-grader': '+',
  'copy-in-grader': '+',
  'start-grader': '>',
  'finish-grade': '*',
};

function verb(op: Operation): string {
  const t = op.type;
  if (t.startsWith('create-')) return 'create';
  if (t.startsWith('remove-')) return 'remove';
  if (op.type === 'record') return `mark ${op.patch.phase}`;
  if (op.type === 'begin-run') return 'begin run';
  if (op.type === 'begin-grade') return `begin grade ${op.grader.k}`;
  if (op.type === 'copy-in-grader') return 'copy workspace';
  if (op.type === 'start-grader') return 'start grader';
  if (op.type === 'finish-grade') return `finish grade ${op.k}`;
  if (op.type === 'copy-in') return `copy ${op.archive}`;
  if (op.type === 'connect-sidecar') return 'connect';
  if (op.type === 'copy-in-sidecar') return 'copy secrets';
  if (op.type === 'start-sidecar') return 'start';
  if (op.type === 'ready-sidecar') return 'await ready';
  if (op.type === 'record-copied') return 'mark copied';
  if (op.type === 'attest-start') return 'attest start';
  if (op.type === 'finish' && op.outcome) return `finish ${op.outcome.phase}`;
  return t;
}

/**
 * Operations that change something: every type but a deep attestation (`attest` reads, and
 * changes something only when the container fails it), so a converged instance whose
 * attestation is due has no changes: `plan --detailed-exitcode` exits 0.
 */
export function changeCount(p: Plan): number {
  return p.actions.reduce((n, a) => n + a.ops.filter((o) => o.type !== 'attest').length, 0);
}

/**
 * Per AttemptSet, the children the plan replaces (their rendered spec changed, e.g. a template
 * edit) and the ones it adds (new cells), in plan order.
 */
export function setChanges(p: Plan): Map<string, { replaced: string[]; added: string[] }> {
  const out = new Map<string, { replaced: string[]; added: string[] }>();
  for (const a of p.actions) {
    if (!a.set || !a.desired || a.ops.length === 0 || a.kind === 'skip') continue;
    const replaced = a.status !== undefined && a.status.specHash !== '' && a.status.specHash !== a.desired.hash;
    const added = a.status === undefined;
    if (!replaced && !added) continue;
    let e = out.get(a.set);
    if (!e) out.set(a.set, (e = { replaced: [], added: [] }));
    (replaced ? e.replaced : e.added).push(a.attempt);
  }
  return out;
}

function nameList(names: string[]): string {
  return names.length > 20 ? `${names.slice(0, 20).join(', ')} and ${names.length - 20} more` : names.join(', ');
}

export function renderPlan(p: Plan): string {
  let out = '';
  renderPlanTo(p, (s) => (out += s));
  return out;
}

/**
 * The plan's text, written through `write` a piece at a time (about 64 KiB each): a plan of
 * 100,000 attempts is 200,000 lines, never held as one string (issue 55).
 */
export function renderPlanTo(p: Plan, write: (s: string) => void): void {
  let buf: string[] = [];
  let size = 0;
  const lines = {
    push(line: string): void {
      buf.push(line);
      size += line.length + 1;
      if (size >= 65_536) {
        write(buf.join('\n') + '\n');
        buf = [];
        size = 0;
      }
    },
  };
  if (p.emptySource === 'held') {
    const n = new Set([...p.actions.map((a) => a.attempt), ...p.unchanged.keys()]).size;
    lines.push(`The specs source yields no attempts while the instance has ${n}: nothing is removed (--allow-empty removes them).`);
  }
  const withOps = p.actions.filter((a) => a.ops.length > 0);
  for (const a of withOps) {
    lines.push(`attempt ${a.attempt}: ${a.kind} (${a.summary})`);
    // what the new spec changes (Terraform's ~ field: old -> new), secrets by name only
    if (a.specDiff && 'changes' in a.specDiff) for (const c of a.specDiff.changes) lines.push(`  ${changeText(c)}`);
    else if (a.specDiff) lines.push(`  ? ${a.specDiff.unknown}`);
    const width = Math.max(...a.ops.map((o) => verb(o).length));
    const rwidth = Math.max(...a.ops.map((o) => o.resource.length));
    for (const op of a.ops) {
      lines.push(`  ${SIGN[op.type]} ${verb(op).padEnd(width)}  ${op.resource.padEnd(rwidth)}  (${op.cause})`);
    }
  }
  for (const [set, c] of [...setChanges(p)].sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (c.replaced.length)
      lines.push(`AttemptSet ${set}: ${c.replaced.length} ${c.replaced.length === 1 ? 'child' : 'children'} replaced (spec changed): ${nameList(c.replaced)}`);
    if (c.added.length) lines.push(`AttemptSet ${set}: ${c.added.length} new ${c.added.length === 1 ? 'child' : 'children'}: ${nameList(c.added)}`);
  }
  for (const m of p.missingImages ?? []) {
    lines.push(`Image ${m.image} is not on the engine: ${plural(m.attempts.length, 'attempt')} blocked (ImageMissing): ${nameList(m.attempts)}`);
  }
  for (const r of p.pulls ?? []) lines.push(`Image ${r.ref} is pulled first: ${plural(r.attempts.length, 'attempt')} wait (Pulling): ${nameList(r.attempts)}`);
  for (const b of p.builds ?? []) lines.push(`Image ${b.tag} is built first: ${plural(b.attempts.length, 'attempt')} wait (Building): ${nameList(b.attempts)}`);
  // an attempt with nothing to do is counted once (a Blocked one is both unchanged and an action without operations)
  const unchanged = new Set([...p.unchanged.keys(), ...p.actions.filter((a) => a.ops.length === 0).map((a) => a.attempt)]).size;
  lines.push(
    withOps.length === 0
      ? `No changes: ${plural(unchanged, 'attempt')} as specified.`
      : `Plan: ${plural(withOps.length, 'attempt')} to change (${changeCount(p)} operations), ${unchanged} unchanged.`,
  );
  write(buf.join('\n') + '\n');
}

export function planToJson(p: Plan): unknown {
  return {
    at: new Date(p.at).toISOString(),
    changes: changeCount(p),
    actions: p.actions
      .filter((a) => a.ops.length > 0)
      .map((a) => ({
        attempt: a.attempt,
        ...(a.set ? { set: a.set } : {}),
        kind: a.kind,
        summary: a.summary,
        ...(a.specDiff ? { diff: 'changes' in a.specDiff ? a.specDiff.changes : { unknown: a.specDiff.unknown } } : {}),
        operations: a.ops.map((o) => ({ type: o.type, resource: o.resource, cause: o.cause })),
      })),
    unchanged: Object.fromEntries([...p.unchanged.entries()].sort(([a], [b]) => (a < b ? -1 : 1))),
    sets: Object.fromEntries(setChanges(p)),
    ...(p.emptySource ? { emptySource: p.emptySource } : {}),
    ...(p.missingImages ? { missingImages: p.missingImages } : {}),
    ...(p.builds ? { builds: p.builds.map((b) => ({ image: b.tag, hash: b.hash, context: b.build.context, attempts: b.attempts })) } : {}),
  };
}
