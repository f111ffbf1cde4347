/**
 * A git source's REF (`--git-ref`), checked before git sees it: git's own ref-name rules
 * (git-check-ref-format(1)), plus no leading `-` or `+` (an option, a forced refspec) and no
 * `:` or `*` (a refspec). The CLI then asks `git check-ref-format` too. Pure.
 */

/** Why `ref` is refused, or undefined when it may be used. */
export function refProblem(ref: string): string | undefined {
  if (ref === '') return 'the ref is empty';
  if (ref.startsWith('-')) return 'the ref starts with "-" (git would read it as an option)';
  if (ref.startsWith('+')) return 'the ref starts with "+"';
  if (ref === '@') return 'the ref "@" is not a name';
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u0020\u007f~^:?*[\\]/.test(ref)) return 'the ref holds a space, a control character or one of ~ ^ : ? * [ \\';
  if (ref.includes('..')) return 'the ref holds ".."';
  if (ref.includes('@{')) return 'the ref holds "@{"';
  if (ref.includes('//') || ref.startsWith('/') || ref.endsWith('/')) return 'the ref has an empty path component';
  if (ref.endsWith('.')) return 'the ref ends with "."';
  for (const part of ref.split('/')) {
    if (part.startsWith('.')) return 'a component of the ref starts with "."';
    if (part.endsWith('.lock')) return 'a component of the ref ends with ".lock"';
  }
  if (ref.length > 255) return 'the ref is longer than 255 characters';
  return undefined;
}

/** Why a `--git-path` is refused (relative, inside the repository, no `..`), or undefined. */
export function gitPathProblem(p: string): string | undefined {
  if (p.startsWith('/')) return 'the path must be relative to the repository root';
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f:\\]/.test(p)) return 'the path holds a control character, ":" or "\\"';
  if (p.split('/').some((x) => x === '..')) return 'the path holds ".."';
  if (p.startsWith('-')) return 'the path starts with "-"';
  return undefined;
}

/** `--git-path` as git names a tree inside a commit ('' for the root). */
export function normalGitPath(p: string): string {
  return p
    .split('/')
    .filter((x) => x !== '' && x !== '.')
    .join('/');
}
