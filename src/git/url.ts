/**
 * The URL of a git source, checked before git ever sees it (docs/GITOPS.md, "Pitfalls"): a
 * scheme from GIT.schemes or ssh's scp form (`user@host:path`); never git's `<transport>::`
 * form (`ext::` runs a command), never a leading `-` (read as an option), no spaces or control
 * characters, and no credentials: an http(s) URL with a user or password part is refused, since
 * URLs are logged, shown and kept in status. Pure.
 */
import { GIT } from '../constants';

export interface GitUrl {
  /** What git is given. */
  url: string;
  scheme: string;
  /** What berth shows and records: the URL itself (it holds no credentials). */
  display: string;
}

export type ParsedUrl = { ok: true; value: GitUrl } | { ok: false; message: string };

const SCP = /^([A-Za-z0-9._-]+@)?([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]):(?!\/\/)(.+)$/;

/** Checks `raw`; the message of a refusal never repeats the URL (it may hold a secret). */
export function parseGitUrl(raw: string): ParsedUrl {
  const no = (message: string): ParsedUrl => ({ ok: false, message });
  if (raw === '') return no('the URL is empty');
  if (raw.startsWith('-')) return no('the URL starts with "-" (git would read it as an option)');
  // eslint-disable-next-line no-control-regex
  if (/[\s\u0000-\u001f\u007f]/.test(raw)) return no('the URL holds a space or a control character');
  const transport = /^([A-Za-z][A-Za-z0-9+.-]*)::/.exec(raw);
  if (transport) return no(`the "${transport[1]}::" transport form is refused (it can run commands); use one of ${GIT.schemes.join(', ')}`);
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(raw)?.[1]?.toLowerCase();
  if (scheme === undefined) {
    const scp = SCP.exec(raw);
    if (scp && !raw.startsWith('/')) return { ok: true, value: { url: raw, scheme: 'ssh', display: raw } };
    return no(`the URL has no scheme; use one of ${GIT.schemes.map((s) => `${s}://`).join(', ')} or user@host:path for ssh`);
  }
  if (!GIT.schemes.includes(scheme)) return no(`scheme "${scheme}" is not allowed; use one of ${GIT.schemes.join(', ')}`);
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return no('the URL cannot be parsed');
  }
  if ((scheme === 'http' || scheme === 'https') && (u.username !== '' || u.password !== '')) {
    return no('the URL holds credentials; give a token with --git-token-file or --git-token-env instead (a URL is logged and shown)');
  }
  if (u.password !== '') return no('the URL holds a password; use an ssh key (--git-ssh-key) instead');
  if (scheme === 'file' && u.host !== '') return no('a file:// URL names no host: file:///path/to/repo');
  return { ok: true, value: { url: raw, scheme, display: raw } };
}
