/**
 * A build context's `.dockerignore`, read and matched as Docker 20.10 does (the CLI's
 * `dockerignore.ReadAll` and moby's `fileutils.PatternMatcher`), so what berth sends is what
 * `docker build` would send. Pure.
 *
 * Docker's rules, which are not gitignore's (the `ignore` package, used for `.berthignore`, follows
 * gitignore and would differ in each of these):
 * - a pattern is anchored at the context's root: `foo` is `./foo` only, never `a/foo` (gitignore
 *   matches a slash-less pattern at any depth); `**` matches any number of folders;
 * - a pattern is cleaned as a path (Go's filepath.Clean: `a/` is `a`, so a trailing slash does
 *   not make it folder-only; a leading `/` is dropped);
 * - the last matching pattern wins, and `!pattern` re-includes even inside an excluded folder
 *   (gitignore cannot re-include below an excluded folder);
 * - a pattern that matches a folder excludes everything below it;
 * - `*` and `?` never match `/`; `\` escapes the next character; other characters go into the
 *   regular expression as they are (Docker's own quirk: `[a-z]` is a class, `+` a repetition).
 *
 * One rule is berth's own: a pattern that leads out of the context (`..`, `../x`, `!../`) is
 * refused with its line, where Docker ignores it silently (it can never match inside).
 */

export interface IgnorePattern {
  /** Line of the `.dockerignore` (1-based). */
  line: number;
  /** `!`: re-includes what it matches. */
  exclusion: boolean;
  /** The cleaned pattern (without `!`). */
  text: string;
  re: RegExp;
  /** Its path components: a folder whose first components match excludes what is below. */
  dirs: number;
}

export interface DockerIgnore {
  patterns: readonly IgnorePattern[];
  /** Some pattern re-includes (`!`): an excluded folder must still be walked. */
  exclusions: boolean;
}

export type DockerIgnoreRead = { ok: true; ignore: DockerIgnore } | { ok: false; line: number; message: string };

/** Go's filepath.Clean on a slash path: `.` for empty, no trailing slash, `..` resolved lexically. */
export function goClean(p: string): string {
  if (p === '') return '.';
  const rooted = p.startsWith('/');
  const out: string[] = [];
  for (const part of p.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (out.length > 0 && out[out.length - 1] !== '..') out.pop();
      else if (!rooted) out.push('..');
      continue;
    }
    out.push(part);
  }
  const joined = out.join('/');
  if (rooted) return `/${joined}`;
  return joined === '' ? '.' : joined;
}

/** moby's Pattern.compile: the pattern as an anchored regular expression. */
function compile(pattern: string): RegExp {
  let re = '^';
  const chars = Array.from(pattern);
  for (let i = 0; i < chars.length; i++) {
    const ch = chars[i] as string;
    if (ch === '*') {
      if (chars[i + 1] === '*') {
        i++;
        // `**/` is `**`
        if (chars[i + 1] === '/') i++;
        re += i + 1 >= chars.length ? '.*' : '(.*/)?';
      } else re += '[^/]*';
    } else if (ch === '?') re += '[^/]';
    else if (ch === '.' || ch === '$') re += `\\${ch}`;
    else if (ch === '\\') {
      if (i + 1 < chars.length) re += `\\${chars[++i] as string}`;
      else re += '\\\\';
    } else re += ch;
  }
  return new RegExp(`${re}$`);
}

/** Reads a `.dockerignore`'s text: its patterns in order, or the first line that is wrong. */
export function parseDockerignore(text: string): DockerIgnoreRead {
  const patterns: IgnorePattern[] = [];
  const lines = text.replace(/^\uFEFF/, '').split('\n');
  for (const [i, raw] of lines.entries()) {
    const line = i + 1;
    // comments are whole lines starting with `#`, before any trimming
    if (raw.startsWith('#')) continue;
    let p = raw.trim();
    if (p === '') continue;
    const exclusion = p.startsWith('!');
    if (exclusion) p = p.slice(1).trim();
    if (p === '') return { ok: false, line, message: `.dockerignore line ${line}: "!" alone is not a pattern` };
    p = goClean(p);
    if (p.length > 1 && p.startsWith('/')) p = p.slice(1);
    if (p === '..' || p.startsWith('../'))
      return {
        ok: false,
        line,
        message: `.dockerignore line ${line}: ${JSON.stringify(raw.trim())} leads out of the build context; a pattern matches only inside it`,
      };
    let re: RegExp;
    try {
      re = compile(p);
    } catch {
      return { ok: false, line, message: `.dockerignore line ${line}: ${JSON.stringify(raw.trim())} is not a valid pattern` };
    }
    patterns.push({ line, exclusion, text: p, re, dirs: p.split('/').length });
  }
  return { ok: true, ignore: { patterns, exclusions: patterns.some((x) => x.exclusion) } };
}

/** moby's PatternMatcher.Matches: whether `rel` (forward slashes, from the context's root) is excluded. */
export function isExcluded(ig: DockerIgnore, rel: string): boolean {
  if (ig.patterns.length === 0) return false;
  const slash = rel.lastIndexOf('/');
  const parent = slash < 0 ? '.' : rel.slice(0, slash);
  const parentDirs = parent === '.' ? [] : parent.split('/');
  let matched = false;
  for (const p of ig.patterns) {
    let match = p.re.test(rel);
    // a pattern that matches one of the path's folders (as many first components as it has)
    if (!match && parent !== '.' && p.dirs <= parentDirs.length) match = p.re.test(parentDirs.slice(0, p.dirs).join('/'));
    if (match) matched = !p.exclusion;
  }
  return matched;
}
