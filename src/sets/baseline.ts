/**
 * A baseline for `berth compare --baseline FILE` and `berth report --baseline FILE`, pure: the
 * text of an earlier `berth summary -o json` in, its sets as a comparison's side out (the fields
 * compare.ts reads), or a problem naming the file, line, column and field.
 */
import { LineCounter, parseDocument } from 'yaml';
import type { SideSet } from './compare';
import type { OutcomeClass } from './outcome';
import { SUMMARY_SCHEMA_VERSION } from './summary';

export interface Baseline {
  generatedAt: string | null;
  sets: SideSet[];
}

const OUTCOMES: readonly OutcomeClass[] = ['passed', 'failed', 'infra', 'skipped', 'unfinished'];

type Path = (string | number)[];

class Bad extends Error {
  constructor(
    readonly path: Path,
    message: string,
  ) {
    super(message);
  }
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function str(v: unknown, path: Path): string {
  if (typeof v !== 'string') throw new Bad(path, 'must be a string');
  return v;
}

function arr(v: unknown, path: Path): unknown[] {
  if (!Array.isArray(v)) throw new Bad(path, 'must be a list');
  return v;
}

function obj(v: unknown, path: Path): Record<string, unknown> {
  if (!isObj(v)) throw new Bad(path, 'must be an object');
  return v;
}

function setOf(v: unknown, at: Path): SideSet {
  const s = obj(v, at);
  const axes = arr(s.axes, [...at, 'axes']).map((a, i) => str(a, [...at, 'axes', i]));
  const samplesAxis = s.samplesAxis === null || s.samplesAxis === undefined ? null : str(s.samplesAxis, [...at, 'samplesAxis']);
  const children = arr(s.children, [...at, 'children']).map((c, i) => {
    const p = [...at, 'children', i];
    const o = obj(c, p);
    const coords = obj(o.coords, [...p, 'coords']);
    for (const [k, x] of Object.entries(coords)) str(x, [...p, 'coords', k]);
    if (!OUTCOMES.includes(o.outcome as OutcomeClass)) throw new Bad([...p, 'outcome'], `must be one of ${OUTCOMES.join(', ')}`);
    const reason = o.reason === null || o.reason === undefined ? null : str(o.reason, [...p, 'reason']);
    return { name: str(o.name, [...p, 'name']), coords: coords as Record<string, string>, outcome: o.outcome as OutcomeClass, reason };
  });
  return { name: str(s.name, [...at, 'name']), axes, samplesAxis, children };
}

const pathText = (p: Path) => p.map((s, i) => (typeof s === 'number' ? `[${s}]` : i ? `.${s}` : s)).join('') || '(the document)';

/** Where `path` is in `text` (1-based), found by parsing it again with positions: only when something is wrong. */
function place(text: string, path: Path): { line: number; col: number } {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines });
  for (let n = path.length; n >= 0; n--) {
    const node = doc.getIn(path.slice(0, n), true) as { range?: [number, number, number] } | undefined;
    if (node?.range) return lines.linePos(node.range[0]);
  }
  return { line: 1, col: 1 };
}

/** The baseline in `text` (the file `file`), or what is wrong with it. */
export function parseBaseline(text: string, file: string): Baseline | { problem: string } {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    return { problem: `${file}: not JSON (berth summary -o json writes it): ${(err as Error).message.slice(0, 200)}` };
  }
  try {
    const root = obj(doc, []);
    if (root.schemaVersion !== SUMMARY_SCHEMA_VERSION)
      throw new Bad(['schemaVersion'], `must be ${SUMMARY_SCHEMA_VERSION} (a berth summary -o json; got ${JSON.stringify(root.schemaVersion)})`);
    const sets = arr(root.sets, ['sets']).map((s, i) => setOf(s, ['sets', i]));
    return { generatedAt: typeof root.generatedAt === 'string' ? root.generatedAt : null, sets };
  } catch (err) {
    if (!(err instanceof Bad)) throw err;
    const at = place(text, err.path);
    return { problem: `${file}:${at.line}:${at.col}: ${pathText(err.path)}: ${err.message}` };
  }
}
