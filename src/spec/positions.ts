/**
 * Field path → place in the YAML source. Walks the composed document along the path (following
 * aliases to where their value is written) and returns the offset of the value or of the key that
 * names it; LineCounter turns offsets into 1-based line and column. A path that does not exist in
 * full falls back to the deepest part that does.
 */
import { isAlias, isMap, isPair, isScalar, isSeq } from 'yaml';
import type { Alias, Document, LineCounter, Node as YamlNode, Pair } from 'yaml';
import type { Segment } from './field-path';

/** value: the value at the path; key: the key that names it (the value for list items and the root). */
export type Anchor = 'value' | 'key';

export class DocLocator {
  private readonly mapIndex = new WeakMap<object, Map<string, Pair>>();

  constructor(
    private readonly doc: Document.Parsed,
    private readonly lineCounter: LineCounter,
    private readonly aliasTargets: ReadonlyMap<Alias, YamlNode>,
  ) {}

  /** 1-based line and column for `segs`. */
  position(segs: readonly Segment[], anchor: Anchor = 'value'): { line: number; col: number } {
    return this.lineCounter.linePos(this.offset(segs, anchor));
  }

  offset(segs: readonly Segment[], anchor: Anchor = 'value'): number {
    let node = this.deref(this.doc.contents as YamlNode | null);
    let valueOff = start(node) ?? this.doc.range?.[0] ?? 0;
    let keyOff: number | undefined;
    for (const seg of segs) {
      let next: YamlNode | null;
      let nextKey: number | undefined;
      if (typeof seg === 'number' && node !== null && isSeq(node)) {
        const item = node.items[seg] as YamlNode | null | undefined;
        if (item === undefined) return keyOff ?? valueOff;
        next = this.deref(item);
        nextKey = undefined;
      } else if (node !== null && isMap(node)) {
        const pair = this.pairs(node).get(String(seg));
        if (!pair) return anchor === 'key' ? (keyOff ?? valueOff) : valueOff;
        next = this.deref(pair.value as YamlNode | null);
        nextKey = start(pair.key as YamlNode | null);
      } else {
        return valueOff;
      }
      node = next;
      keyOff = nextKey;
      // An empty value (`image:`) has no position of its own: use its key.
      valueOff = start(node) ?? keyOff ?? valueOff;
    }
    return anchor === 'key' ? (keyOff ?? valueOff) : valueOff;
  }

  private deref(node: YamlNode | null): YamlNode | null {
    if (node !== null && isAlias(node)) return this.aliasTargets.get(node) ?? node;
    return node;
  }

  private pairs(map: { items: unknown[] }): Map<string, Pair> {
    let idx = this.mapIndex.get(map);
    if (!idx) {
      idx = new Map();
      for (const p of map.items) {
        if (isPair(p) && isScalar(p.key) && !idx.has(String(p.key.value))) idx.set(String(p.key.value), p);
      }
      this.mapIndex.set(map, idx);
    }
    return idx;
  }
}

function start(node: YamlNode | null | undefined): number | undefined {
  if (!node) return undefined;
  const r = node.range;
  // yaml gives an implicit null (`key:` with nothing after) a zero-width range; treat it as absent.
  if (!r || (isScalar(node) && node.value === null && r[0] === r[1] && node.source === '')) return undefined;
  return r[0];
}
