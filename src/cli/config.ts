/**
 * Where a flag's value comes from when the command line does not give it: its `BERTH_*`
 * environment variable, then `berth.yaml`, then the flag's default. One rule for every flag:
 * `--default-deadline` is `BERTH_DEFAULT_DEADLINE` and the key `default-deadline` (envName,
 * applyDefaults); no list of names to keep in step with the flags.
 *
 * berth.yaml is found at `--config FILE` (or BERTH_CONFIG), else in the working directory, else
 * beside the specs folder the command line or environment names (its parent folder: inside the
 * specs folder it would be read as a spec). Its keys are schemas/config.schema.json's: the
 * flags that make sense as defaults, at the top level and in `contexts: {NAME: {...}}`, chosen by
 * `--context NAME` (BERTH_CONTEXT) or the file's `current-context`; a context's keys win over the
 * top level's. A broken file is a usage error positioned as a spec error is (file:line:col, the
 * field, a caret, did-you-mean). Secrets never go in it: no flag takes one (they name the file
 * or variable that holds it), and a key named like one is refused as such.
 */
import type { Command, Option } from 'commander';
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { CONFIG_FILE, DEFAULTS } from '../constants';
import { didYouMean } from '../spec/did-you-mean';
import { isRecord, type Segment } from '../spec/field-path';
import type * as Positions from '../spec/positions';
import type * as Schema from '../spec/schema';
import type * as SchemaErrors from '../spec/schema-errors';
import type { SpecError } from '../spec/types';
import type * as Utf8 from '../spec/utf8';
import type * as YamlParse from '../spec/yaml-parse';
import type * as YamlToPlain from '../spec/yaml-to-plain';
import { formatErrors } from './format-errors';
import { UsageError } from './usage';

export { CONFIG_FILE };

/** What reading a berth.yaml takes (yaml, the schema), loaded only when there is one: every command asks whether there is (issue 55). */
function reader() {
  return {
    ...(require('../spec/positions') as typeof Positions),
    ...(require('../spec/schema') as typeof Schema),
    ...(require('../spec/schema-errors') as typeof SchemaErrors),
    ...(require('../spec/utf8') as typeof Utf8),
    ...(require('../spec/yaml-parse') as typeof YamlParse),
    ...(require('../spec/yaml-to-plain') as typeof YamlToPlain),
  };
}
/** A berth.yaml is a few lines; anything this big is not one. */
const MAX_CONFIG_BYTES = 1024 * 1024;
/** Keys whose value is a path: relative ones are relative to the file's folder, as kubeconfig's are. */
const PATH_KEYS = new Set([
  'registry-config',
  'specs',
  'state',
  'results-root',
  'webhook-secret-file',
  'api-token-file',
  'notify-secret-file',
  'git-token-file',
  'git-ssh-key',
  'git-known-hosts',
  'git-verify',
]);
/** The file's own keys, which are not flags. */
const OWN_KEYS = new Set(['contexts', 'current-context']);
/** A key named like a credential (that no flag is): refused with the reason, not only as unknown. */
const SECRET_KEY = /(token|secret|password|passwd|credentials?|api[-_]?key|private[-_]?key|auth)$/i;

/** `--default-deadline` → `BERTH_DEFAULT_DEADLINE`; `--no-headers` → `BERTH_NO_HEADERS`. */
export function envName(long: string): string {
  return `BERTH_${long.replace(/^--/, '').replace(/-/g, '_').toUpperCase()}`;
}

/** A value from berth.yaml with where it was written. */
interface ConfigValue {
  value: unknown;
  line: number;
  col: number;
  /** Its field path in the file (`contexts.ci.max-running`). */
  path: string;
}

export interface LoadedConfig {
  /** The file as shown in messages (relative to the working directory when inside it). */
  file: string;
  /** The file's folder, absolute (relative paths in it are relative to this). */
  dir: string;
  /** The context in force, if any. */
  context?: string;
  values: Map<string, ConfigValue>;
  /** The source line `line` of the file (error excerpts). */
  readLine(line: number): string | undefined;
}

function shown(abs: string, cwd: string): string {
  const rel = path.relative(cwd, abs);
  return rel && !rel.startsWith('..') && !path.isAbsolute(rel) ? rel : abs;
}

function isFile(p: string): boolean {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
}

/**
 * The berth.yaml in force: `explicit` (--config, BERTH_CONFIG), which must exist; else one in
 * `cwd`; else one beside `specs` (given on the command line or in the environment).
 */
export function findConfig(o: { explicit?: string; cwd: string; specs?: string }): string | undefined {
  if (o.explicit !== undefined) {
    const abs = path.resolve(o.cwd, o.explicit);
    if (!isFile(abs)) throw new UsageError(`--config ${o.explicit}: no such file`);
    return abs;
  }
  const here = path.join(o.cwd, CONFIG_FILE);
  if (isFile(here)) return here;
  if (o.specs !== undefined) {
    const beside = path.join(path.dirname(path.resolve(o.cwd, o.specs)), CONFIG_FILE);
    if (isFile(beside)) return beside;
  }
  return undefined;
}

/** Reads and checks `abs`, and picks the context (`context`: --context or BERTH_CONTEXT). Throws a UsageError listing every problem. */
export function loadConfig(abs: string, o: { cwd: string; context?: string }): LoadedConfig {
  const { decodeUtf8, DocLocator, parseYamlStream, schemaIssues, toPlain, validateConfig } = reader();
  const file = shown(abs, o.cwd);
  const fail = (errors: SpecError[], lines?: (string | undefined)[]): never => {
    throw new UsageError(`${file} is not a valid berth configuration:\n${formatErrors(errors, lines ? (_f, n) => lines[n - 1] : undefined).trimEnd()}`);
  };
  let bytes: Buffer;
  try {
    if (statSync(abs).size > MAX_CONFIG_BYTES) fail([{ file, line: 1, col: 1, path: '', code: 'too-large', message: `over ${MAX_CONFIG_BYTES} bytes` }]);
    bytes = readFileSync(abs);
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw new UsageError(`${file}: cannot read: ${(err as Error).message}`);
  }
  const text = decodeUtf8(bytes);
  if (!text.ok) return fail([{ file, line: text.line, col: text.col, path: '', code: 'encoding', message: 'not valid UTF-8' }]);
  const lines: (string | undefined)[] = text.text.replace(/^\ufeff/, '').split('\n');
  const stream = parseYamlStream(text.text, DEFAULTS.maxNestingDepth);
  const errors: SpecError[] = stream.issues.map((i) => ({ file, ...stream.lineCounter.linePos(i.offset), path: '', code: i.code, message: i.message }));
  if (stream.docs.length > 1)
    errors.push({ file, ...stream.lineCounter.linePos(stream.docs[1]?.range[0] ?? 0), path: '', code: 'yaml-syntax', message: 'one document only' });
  if (errors.length) return fail(errors, lines);
  const doc = stream.docs[0];
  if (!doc) return { file, dir: path.dirname(abs), values: new Map(), readLine: (n) => lines[n - 1] };
  const plain = toPlain(doc, { maxDepth: DEFAULTS.maxNestingDepth, maxAliasCount: DEFAULTS.maxAliasCount }, stream.lineCounter);
  for (const i of plain.issues) errors.push({ file, ...stream.lineCounter.linePos(i.offset), path: i.path, code: i.code, message: i.message });
  if (errors.length) return fail(errors, lines);
  const locator = new DocLocator(doc, stream.lineCounter, plain.aliasTargets);
  const value = plain.value ?? {};
  const at = (segs: Segment[], anchor: 'key' | 'value' = 'value') => ({ file, ...locator.position(segs, anchor), path: segs.join('.') });

  if (!isRecord(value))
    return fail([{ ...at([]), code: 'not-a-mapping', message: 'berth.yaml must be a mapping of flag names to values (specs: ..., instance: ...)' }], lines);
  // Keys named like credentials: say why they cannot be here, instead of only "unknown".
  const secretKeys: SpecError[] = [];
  const scan = (m: Record<string, unknown>, segs: string[]) => {
    for (const k of Object.keys(m)) {
      if (SECRET_KEY.test(k))
        secretKeys.push({
          ...at([...segs, k], 'key'),
          code: 'schema',
          message: `secrets never go in ${CONFIG_FILE} (it is shown, copied and committed); name where berth reads one instead (git-token-file, git-token-env, webhook-secret-file, notify-secret-env, ...)`,
        });
    }
  };
  scan(value, []);
  if (isRecord(value.contexts)) for (const [name, c] of Object.entries(value.contexts)) if (isRecord(c)) scan(c, ['contexts', name]);
  const schema = validateConfig(value);
  const secretPaths = new Set(secretKeys.map((e) => e.path));
  for (const i of schemaIssues(schema.errors, value)) {
    const e: SpecError = { ...at(i.segs, i.anchor), code: i.code, message: i.message };
    if (!secretPaths.has(e.path)) errors.push(e);
  }
  errors.push(...secretKeys);
  // A line that holds a secret is not shown again (no excerpt under its error).
  for (const e of secretKeys) lines[e.line - 1] = undefined;
  if (errors.length)
    return fail(
      errors.sort((a, b) => a.line - b.line || a.col - b.col),
      lines,
    );

  const contexts = isRecord(value.contexts) ? value.contexts : {};
  const fromFile = typeof value['current-context'] === 'string' ? value['current-context'] : undefined;
  const context = o.context ?? fromFile;
  const values = new Map<string, ConfigValue>();
  const take = (m: Record<string, unknown>, segs: string[]) => {
    for (const [k, v] of Object.entries(m)) if (!OWN_KEYS.has(k)) values.set(k, { value: v, ...at([...segs, k]) });
  };
  take(value, []);
  if (context !== undefined) {
    const chosen = contexts[context];
    if (!isRecord(chosen)) {
      const known = Object.keys(contexts);
      const dym = didYouMean(context, known);
      const why = `--context ${context}: ${file} has no such context`;
      const more = dym ? ` (did you mean ${dym}?)` : known.length ? `; it has ${known.join(', ')}` : '; it has none (contexts: {NAME: {...}})';
      if (o.context !== undefined) throw new UsageError(`${why}${more}`);
      fail([{ ...at(['current-context']), code: 'schema', message: `no context "${context}" in contexts${more}` }], lines);
    }
    take(chosen as Record<string, unknown>, ['contexts', context]);
  }
  return { file, dir: path.dirname(abs), ...(context !== undefined ? { context } : {}), values, readLine: (n) => lines[n - 1] };
}

/** The options a value can be given for (long flags other than --help and --version). */
function settable(cmd: Command): Option[] {
  return cmd.options.filter((o) => o.long !== undefined && o.long !== '--help' && o.long !== '--version');
}

const TRUE = /^(1|true|yes|on)$/i;
const FALSE = /^(0|false|no|off)$/i;

/**
 * Gives each option of `cmd` the command line did not set its value from the environment
 * (`BERTH_<FLAG>`), else from `config` (keys of flags `cmd` does not have are left for others).
 * Values go through the option's own parser, so a duration takes units, a choice is checked,
 * exactly as on the command line.
 */
export function applyDefaults(cmd: Command, env: NodeJS.ProcessEnv, config?: LoadedConfig): void {
  for (const opt of settable(cmd)) {
    const key = opt.attributeName();
    const source = cmd.getOptionValueSource(key);
    if (source !== undefined && source !== 'default') continue;
    const name = envName(opt.long as string);
    const raw = env[name];
    if (raw !== undefined && raw !== '') {
      cmd.setOptionValueWithSource(
        key,
        parsed(opt, raw, (m) => new UsageError(`${name}=${raw}: ${m}`)),
        'env',
      );
      continue;
    }
    const flag = (opt.long as string).slice(2);
    const c = config?.values.get(flag);
    if (!c || !config) continue;
    const text = typeof c.value === 'string' ? c.value : String(c.value);
    const value = PATH_KEYS.has(flag) ? path.resolve(config.dir, text) : text;
    const where = (m: string) =>
      new UsageError(
        `${config.file} is not a valid berth configuration:\n${formatErrors(
          [{ file: config.file, line: c.line, col: c.col, path: c.path, code: 'schema', message: m }],
          (_f, n) => config.readLine(n),
        ).trimEnd()}`,
      );
    cmd.setOptionValueWithSource(key, parsed(opt, value, where), 'config');
  }
}

function parsed(opt: Option, raw: string, error: (message: string) => Error): unknown {
  // commander's isBoolean() is false for a negated flag (`--no-headers`): it is a switch all the same
  if (opt.isBoolean() || (opt.negate && !opt.required && !opt.optional)) {
    if (TRUE.test(raw)) return !opt.negate;
    if (FALSE.test(raw)) return opt.negate;
    throw error('must be true or false (or 1, 0)');
  }
  if (!opt.parseArg) return raw;
  try {
    return opt.parseArg(raw, undefined);
  } catch (err) {
    throw error((err as Error).message.replace(/^error: /, ''));
  }
}
