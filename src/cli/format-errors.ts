/**
 * Spec errors as a compiler prints them: `file:line:col: path: message [code]`, then the source
 * line and a caret under the column. Pure: the caller supplies a way to read source lines.
 */
import nodePath from 'node:path';
import type { SpecError } from '../spec/types';

/** The 1-based `line` of `file`, without its line break, or undefined when unavailable. */
export type ReadLine = (file: string, line: number) => string | undefined;

/** Longest source excerpt shown; longer lines are cut to a window around the column. */
const MAX_EXCERPT = 120;
/** Codes whose position is not about a line of YAML. */
const NO_EXCERPT = new Set(['io', 'too-large']);

/** `file:line:col: path: message [code]` — the first line of a formatted error. */
export function errorHeadline(e: SpecError): string {
  const where = e.file ? `${e.file}:${e.line}:${e.col}: ` : '';
  const path = e.path ? `${e.path}: ` : '';
  return `${where}${path}${e.message} [${e.code}]`;
}

/** One error with its source excerpt, lines joined by '\n' (no trailing newline). */
export function formatError(e: SpecError, readLine?: ReadLine): string {
  const out = [errorHeadline(e)];
  if (readLine && e.file && !NO_EXCERPT.has(e.code)) {
    let src: string | undefined;
    try {
      src = readLine(e.file, e.line);
    } catch {
      src = undefined;
    }
    if (src !== undefined) out.push(...excerpt(src, e.line, e.col));
  }
  return out.join('\n');
}

/** Every error, each followed by its excerpt; '' when there are none, else ends with '\n'. */
export function formatErrors(errors: readonly SpecError[], readLine?: ReadLine): string {
  return errors.map((e) => `${formatError(e, readLine)}\n`).join('');
}

/** `  12 | source` and `     |    ^`, with the line made safe for a terminal and cut if long. */
export function excerpt(line: string, lineNo: number, col: number): string[] {
  let text = line.replace(/\r$/, '');
  let caretAt = Math.max(0, Math.min(col - 1, text.length));
  let prefix = '';
  let suffix = '';
  if (text.length > MAX_EXCERPT) {
    const start = Math.max(0, Math.min(caretAt - MAX_EXCERPT / 2, text.length - MAX_EXCERPT));
    if (start > 0) prefix = '…';
    if (start + MAX_EXCERPT < text.length) suffix = '…';
    text = text.slice(start, start + MAX_EXCERPT);
    caretAt -= start;
  }
  // eslint-disable-next-line no-control-regex
  const safe = text.replace(/[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/g, '\ufffd');
  const pad = prefix + safe.slice(0, caretAt).replace(/[^\t]/g, ' ');
  const gutter = String(lineNo);
  return [` ${gutter} | ${prefix}${safe}${suffix}`, ` ${' '.repeat(gutter.length)} | ${pad.replace(/\u2026/, ' ')}^`];
}

/** A workflow command's data: `%`, CR and LF escaped as GitHub Actions reads them. */
function ghData(s: string): string {
  return s.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
}

/** A workflow command's property value: also `:` and `,`. */
function ghProperty(s: string): string {
  return ghData(s).replace(/:/g, '%3A').replace(/,/g, '%2C');
}

/**
 * Spec errors as GitHub Actions annotations (`::error file=F,line=L,col=C,title=T::message`), one
 * line each, so a pull request shows them on the spec's lines. `file` relative to the workspace
 * (`GITHUB_WORKSPACE`, where the checkout is) when the file lies in it. '' when there are none.
 */
export function githubAnnotations(errors: readonly SpecError[], o: { cwd: string; workspace?: string | undefined }): string {
  return errors
    .map((e) => {
      const props: string[] = [];
      if (e.file) {
        const abs = nodePath.resolve(o.cwd, e.file);
        const rel = o.workspace ? nodePath.relative(o.workspace, abs) : '';
        const shown = rel && !rel.startsWith('..') && !nodePath.isAbsolute(rel) ? rel : e.file;
        props.push(`file=${ghProperty(shown.split(nodePath.sep).join('/'))}`, `line=${e.line}`, `col=${e.col}`);
      }
      props.push(`title=${ghProperty(`berth: ${e.code}${e.path ? ` at ${e.path}` : ''}`)}`);
      return `::error ${props.join(',')}::${ghData(`${e.path ? `${e.path}: ` : ''}${e.message}`)}\n`;
    })
    .join('');
}

/** Attempts annotated at most; the rest are counted in one notice. */
const MAX_OUTCOME_ANNOTATIONS = 50;

/**
 * Attempts that did not pass as GitHub Actions annotations, one line each (`::error` for a task
 * failure and an infrastructure outcome alike, titled by which), at the spec's line when known:
 * a pull request shows which attempts failed, not only which specs were wrong.
 */
export function outcomeAnnotations(
  items: readonly { name: string; outcome: 'failed' | 'infra'; text: string; file?: string; line?: number }[],
  o: { cwd: string; workspace?: string | undefined },
): string {
  const lines = items.slice(0, MAX_OUTCOME_ANNOTATIONS).map((i) => {
    const props: string[] = [];
    if (i.file) {
      const abs = nodePath.resolve(o.cwd, i.file);
      const rel = o.workspace ? nodePath.relative(o.workspace, abs) : '';
      const shown = rel && !rel.startsWith('..') && !nodePath.isAbsolute(rel) ? rel : i.file;
      props.push(`file=${ghProperty(shown.split(nodePath.sep).join('/'))}`, ...(i.line ? [`line=${i.line}`] : []));
    }
    props.push(`title=${ghProperty(`berth: attempt ${i.name} ${i.outcome === 'failed' ? 'failed' : 'ended with an infrastructure outcome'}`)}`);
    return `::error ${props.join(',')}::${ghData(`${i.name} ${i.text}`)}\n`;
  });
  const more = items.length - MAX_OUTCOME_ANNOTATIONS;
  if (more > 0) lines.push(`::notice title=berth::${more} more attempts did not pass (berth summary lists them all)\n`);
  return lines.join('');
}

/** Whether spec errors are also annotations: inside GitHub Actions (`GITHUB_ACTIONS=true`). */
export function inGithubActions(env: NodeJS.ProcessEnv): boolean {
  return env.GITHUB_ACTIONS === 'true';
}
