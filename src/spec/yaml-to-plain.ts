/**
 * A composed YAML document → plain JSON-like data, with the checks yaml itself does not do (or
 * does too slowly): duplicate keys (linear, naming both places), `<<` merge keys, tags outside the
 * core schema, nesting depth, and alias bombs (a budget on alias uses and on the nodes aliases
 * expand to, so later passes over the data stay linear in the file size).
 *
 * Aliased values are shared, not copied; nothing downstream mutates the data.
 */
import { isAlias, isMap, isPair, isScalar, isSeq } from 'yaml';
import type { Alias, Document, LineCounter, Node as YamlNode } from 'yaml';
import { formatPath, type Segment } from './field-path';
import type { SpecErrorCode } from './types';

/** Upper bound on nodes that aliases may expand to in one document (beyond the text itself). */
export const MAX_ALIAS_EXPANSION_NODES = 10_000;

const CORE_TAGS = new Set(['str', 'int', 'float', 'bool', 'null', 'map', 'seq'].map((t) => `tag:yaml.org,2002:${t}`));

export interface PlainIssue {
  offset: number;
  code: SpecErrorCode;
  message: string;
  path: string;
}

export interface PlainResult {
  value: unknown;
  issues: PlainIssue[];
  /** Where each alias in the document points, for locating errors inside aliased values. */
  aliasTargets: Map<Alias, YamlNode>;
}

interface Info {
  value: unknown;
  /** Nodes in the expanded value. */
  weight: number;
  /** Collection nesting of the expanded value (a scalar is 0). */
  height: number;
}

class Abort extends Error {}

export interface PlainLimits {
  maxDepth: number;
  maxAliasCount: number;
  maxAliasExpansion?: number;
}

/** Converts `doc.contents`. Stops at the first alias or depth violation (the rest would be noise). */
export function toPlain(doc: Document.Parsed, limits: PlainLimits, lineCounter: LineCounter): PlainResult {
  const issues: PlainIssue[] = [];
  const aliasTargets = new Map<Alias, YamlNode>();
  const anchors = new Map<string, YamlNode>();
  const done = new Map<YamlNode, Info>();
  const inProgress = new Set<YamlNode>();
  const maxExpansion = limits.maxAliasExpansion ?? MAX_ALIAS_EXPANSION_NODES;
  let aliasUses = 0;
  let expanded = 0;

  const issue = (node: YamlNode | null | undefined, code: SpecErrorCode, message: string, path: Segment[]): void => {
    issues.push({ offset: node?.range?.[0] ?? 0, code, message, path: formatPath(path) });
  };
  const stop = (node: YamlNode, code: SpecErrorCode, message: string, path: Segment[]): never => {
    issue(node, code, message, path);
    throw new Abort();
  };

  const convert = (node: YamlNode | null, depth: number, path: Segment[]): Info => {
    if (node === null) return { value: null, weight: 1, height: 0 };
    if (isAlias(node)) return resolveAlias(node, depth, path);
    if (node.anchor) anchors.set(node.anchor, node);
    if (node.tag && !CORE_TAGS.has(node.tag)) {
      issue(node, 'yaml-tag', `tag ${shortTag(node.tag)} is not supported; write plain YAML values`, path);
    }
    let info: Info;
    if (isScalar(node)) {
      info = { value: node.value, weight: 1, height: 0 };
    } else if (isMap(node) || isSeq(node)) {
      if (depth + 1 > limits.maxDepth) stop(node, 'yaml-too-deep', `nesting deeper than ${limits.maxDepth} levels`, path);
      inProgress.add(node);
      info = isMap(node) ? convertMap(node.items, depth + 1, path) : convertSeq(node.items, depth + 1, path);
      inProgress.delete(node);
    } else {
      info = { value: null, weight: 1, height: 0 };
    }
    done.set(node, info);
    return info;
  };

  const convertMap = (items: readonly unknown[], depth: number, path: Segment[]): Info => {
    const out: Record<string, unknown> = {};
    const seen = new Map<string, YamlNode>();
    let weight = 1;
    let height = 1;
    for (const pair of items) {
      if (!isPair(pair)) continue;
      const keyNode = pair.key as YamlNode | null;
      if (isAlias(keyNode)) {
        issue(keyNode, 'yaml-syntax', 'an alias cannot be a key', path);
        continue;
      }
      if (!isScalar(keyNode)) continue; // yaml reports non-string keys itself (stringKeys)
      if (keyNode.tag && !CORE_TAGS.has(keyNode.tag)) {
        issue(keyNode, 'yaml-tag', `tag ${shortTag(keyNode.tag)} is not supported; write plain YAML values`, path);
      }
      const key = String(keyNode.value);
      if (key === '<<') {
        issue(keyNode, 'yaml-tag', 'merge keys (<<) are not supported; write the fields out', [...path, key]);
        continue;
      }
      const first = seen.get(key);
      if (first) {
        issue(keyNode, 'yaml-duplicate-key', `duplicate key "${key}" (first at line ${lineCounter.linePos(first.range?.[0] ?? 0).line})`, [...path, key]);
        continue;
      }
      seen.set(key, keyNode);
      const child = convert(pair.value as YamlNode | null, depth, [...path, key]);
      Object.defineProperty(out, key, { value: child.value, enumerable: true, writable: true, configurable: true });
      weight += child.weight;
      height = Math.max(height, child.height + 1);
    }
    return { value: out, weight, height };
  };

  const convertSeq = (items: readonly unknown[], depth: number, path: Segment[]): Info => {
    const out: unknown[] = [];
    let weight = 1;
    let height = 1;
    items.forEach((item, i) => {
      const child = convert(item as YamlNode | null, depth, [...path, i]);
      out.push(child.value);
      weight += child.weight;
      height = Math.max(height, child.height + 1);
    });
    return { value: out, weight, height };
  };

  const resolveAlias = (alias: Alias, depth: number, path: Segment[]): Info => {
    const target = anchors.get(alias.source);
    if (!target) return stop(alias, 'yaml-syntax', `alias *${alias.source} refers to no anchor defined before it`, path);
    if (inProgress.has(target)) return stop(alias, 'yaml-syntax', `alias *${alias.source} refers to a value that contains it`, path);
    const info = done.get(target);
    if (!info) return stop(alias, 'yaml-syntax', `alias *${alias.source} cannot be resolved`, path);
    aliasTargets.set(alias, target);
    aliasUses++;
    if (aliasUses > limits.maxAliasCount) {
      stop(alias, 'yaml-alias-limit', `more than ${limits.maxAliasCount} aliases in one document`, path);
    }
    expanded += info.weight;
    if (expanded > maxExpansion) {
      stop(alias, 'yaml-alias-limit', `aliases expand to more than ${maxExpansion} values (an alias bomb?)`, path);
    }
    if (depth + info.height > limits.maxDepth) {
      stop(alias, 'yaml-too-deep', `nesting deeper than ${limits.maxDepth} levels (through alias *${alias.source})`, path);
    }
    return info;
  };

  try {
    const info = convert(doc.contents as YamlNode | null, 0, []);
    return { value: info.value, issues, aliasTargets };
  } catch (err) {
    if (err instanceof Abort) return { value: undefined, issues, aliasTargets };
    issues.push({ offset: 0, code: 'yaml-syntax', message: `cannot read document: ${String((err as Error)?.message ?? err)}`, path: '' });
    return { value: undefined, issues, aliasTargets };
  }
}

/** `tag:yaml.org,2002:binary` → `!!binary`, as users write it. */
function shortTag(tag: string): string {
  return tag.startsWith('tag:yaml.org,2002:') ? `!!${tag.slice('tag:yaml.org,2002:'.length)}` : tag;
}
