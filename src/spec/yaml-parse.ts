/**
 * YAML text → parsed documents, safely. Drives yaml's lexer and parser by hand so that deep
 * nesting is refused while parsing (before the recursive composer could exhaust the stack), then
 * composes documents with the YAML 1.2 core schema and turns yaml's errors into SpecError codes.
 *
 * Options, and why: `schema: 'core'` + `resolveKnownTags: false` (yes/no stay strings, no
 * !!binary/!!set/!!timestamp), `merge: false` (a `<<` key is then reported by yaml-to-plain),
 * `stringKeys: true` (non-scalar keys are errors), `strict: true`, `prettyErrors: false` (positions
 * are ours), `logLevel: 'error'` (no process warnings). `uniqueKeys` is off on purpose: yaml checks
 * it pairwise, which is quadratic (20k keys take seconds); yaml-to-plain checks duplicates in
 * linear time with both positions instead.
 */
import { Composer, Document, LineCounter, Lexer, Parser, isCollection, isScalar, visit } from 'yaml';
import type { CST, DocumentOptions, ParseOptions, SchemaOptions } from 'yaml';
import type { SpecErrorCode } from './types';

export const YAML_OPTIONS: ParseOptions & DocumentOptions & SchemaOptions = {
  version: '1.2',
  schema: 'core',
  merge: false,
  resolveKnownTags: false,
  stringKeys: true,
  uniqueKeys: false,
  strict: true,
  prettyErrors: false,
  logLevel: 'error',
};

/** A problem found while parsing, at a character offset into the text. */
export interface YamlIssue {
  offset: number;
  code: SpecErrorCode;
  message: string;
}

export interface ParsedStream {
  docs: Document.Parsed[];
  /** Parse problems of the whole stream (each also belongs to one of the docs, by offset). */
  issues: YamlIssue[];
  lineCounter: LineCounter;
}

/** Parses every document of `text`. Never throws. */
export function parseYamlStream(text: string, maxDepth: number): ParsedStream {
  const lineCounter = new LineCounter();
  const parser = new Parser(lineCounter.addNewLine);
  lineCounter.addNewLine(0); // what Parser.parse() does before its first lexeme
  const tokens: CST.Token[] = [];
  // The parser's stack holds the document, each open collection and at most one scalar.
  const stackCap = maxDepth + 2;
  try {
    for (const lexeme of new Lexer().lex(text)) {
      for (const tok of parser.next(lexeme)) tokens.push(tok);
      if (parser.stack.length > stackCap) {
        return fatal(lineCounter, parser.offset, 'yaml-too-deep', `nesting deeper than ${maxDepth} levels`);
      }
    }
    for (const tok of parser.end()) tokens.push(tok);
  } catch (err) {
    return fatal(lineCounter, parser.offset, 'yaml-syntax', `cannot parse: ${String((err as Error)?.message ?? err)}`);
  }

  const docs: Document.Parsed[] = [];
  const issues: YamlIssue[] = [];
  try {
    const composer = new Composer(YAML_OPTIONS);
    for (const doc of composer.compose(tokens)) {
      docs.push(doc);
      for (const e of doc.errors) issues.push(toIssue(openedAt(doc, e.pos[0], e.message), e.code, e.message));
      // Unresolved tags are reported by yaml-to-plain, with the field path.
      for (const w of doc.warnings) if (w.code !== 'TAG_RESOLVE_FAILED') issues.push(toIssue(w.pos[0], w.code, w.message));
    }
  } catch (err) {
    return fatal(lineCounter, 0, 'yaml-syntax', `cannot parse: ${String((err as Error)?.message ?? err)}`);
  }
  issues.sort((a, b) => a.offset - b.offset);
  return { docs, issues, lineCounter };
}

function fatal(lineCounter: LineCounter, offset: number, code: SpecErrorCode, message: string): ParsedStream {
  return { docs: [], issues: [{ offset, code, message }], lineCounter };
}

function toIssue(offset: number, yamlCode: string, message: string): YamlIssue {
  if (/call stack/i.test(message)) return { offset, code: 'yaml-too-deep', message: 'nesting too deep' };
  switch (yamlCode) {
    case 'DUPLICATE_KEY':
      return { offset, code: 'yaml-duplicate-key', message };
    case 'TAG_RESOLVE_FAILED':
      return { offset, code: 'yaml-tag', message: `${message}; tags are not supported` };
    case 'NON_STRING_KEY':
      return { offset, code: 'yaml-syntax', message: 'keys must be plain strings, not lists or mappings' };
    default:
      return { offset, code: 'yaml-syntax', message: message.replace(/\s+/g, ' ').trim() };
  }
}

/**
 * yaml reports an unclosed quote or flow collection where it gave up (often the end of the
 * file); point at where the string or collection was opened instead, which is where users look.
 */
function openedAt(doc: Document.Parsed, offset: number, message: string): number {
  const quote = /closing .*quote/i.test(message);
  const flow = /^Flow (map|sequence)/.test(message);
  if (!quote && !flow) return offset;
  let best = -1;
  visit(doc, {
    Node(_key, node) {
      const r = node.range;
      if (!r || r[0] >= offset || r[2] < offset || r[0] <= best) return;
      const hit = quote ? isScalar(node) && (node.type === 'QUOTE_DOUBLE' || node.type === 'QUOTE_SINGLE') : isCollection(node) && node.flow === true;
      if (hit) best = r[0];
    },
  });
  return best >= 0 ? best : offset;
}
