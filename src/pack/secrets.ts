/**
 * Secret values, read just before a container is created and never kept: from berth's own
 * environment (fromEnv) or a file (fromFile). A file is read where the loader checked it, its
 * real path, one component at a time with no link followed (util/no-follow.ts): one swapped for
 * a link since is refused (UnsafePathError), never read. Errors name the attempt and the
 * secret, never the value.
 */
import type { CredentialConfig } from '../proxy/contract';
import type { CredentialSpec, NormalizedAttempt, SecretRef } from '../spec/types';
import { openFileBelow, UnsafePathError } from '../util/no-follow';

export class SecretError extends Error {
  readonly code = 'SECRET_MISSING';
}

/** Reads the values of the named secrets of `spec` (all of them when `names` is omitted). */
export async function readSecrets(spec: NormalizedAttempt, env: NodeJS.ProcessEnv, names?: readonly string[]): Promise<{ name: string; value: Buffer }[]> {
  const out: { name: string; value: Buffer }[] = [];
  for (const s of spec.secrets) {
    if (names && !names.includes(s.name)) continue;
    const value = await readSecret(s, env);
    if (value) out.push({ name: s.name, value });
  }
  return out;
}

/** One secret's value from its source (undefined for a reference with neither source); throws SecretError or UnsafePathError. */
export async function readSecret(s: SecretRef, env: NodeJS.ProcessEnv): Promise<Buffer | undefined> {
  if (s.fromEnv !== undefined) {
    const v = env[s.fromEnv];
    if (v === undefined) throw new SecretError(`secret ${s.name}: environment variable ${s.fromEnv} is not set in berth's environment`);
    return Buffer.from(v, 'utf8');
  }
  if (s.fromFile === undefined) return undefined;
  try {
    const fh = await openFileBelow('/', s.fromFile);
    try {
      return await fh.readFile();
    } finally {
      await fh.close();
    }
  } catch (err) {
    if (err instanceof UnsafePathError) throw new UnsafePathError(`secret ${s.name}: ${err.message}`);
    throw new SecretError(`secret ${s.name}: cannot read ${s.fromFile} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}

/** `VAR=value` lines for secrets explicitly opted into the environment. */
export function secretEnvLines(secretEnv: Record<string, string>, values: { name: string; value: Buffer }[]): string[] {
  return Object.entries(secretEnv)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([k, secret]) => `${k}=${values.find((v) => v.name === secret)?.value.toString('utf8') ?? ''}`);
}

/**
 * The egress proxy's credentials (CredentialConfig) from the spec's credentials and their
 * secrets' values: the format's `{}` is the value, `{base64}` its base64; one line break at the
 * end of the value (as files often have) is dropped. A value a header cannot carry (a line break
 * or NUL inside) is refused, naming the secret, never the value.
 */
export function credentialConfigs(creds: readonly CredentialSpec[], values: readonly { name: string; value: Buffer }[]): CredentialConfig[] {
  const valueOf = (name: string): string => {
    const v = values.find((x) => x.name === name);
    if (!v) throw new SecretError(`secret ${name}: not read`);
    return v.value.toString('utf8').replace(/\r?\n$/, '');
  };
  return creds.map((c) => {
    const secret = valueOf(c.secret);
    if (/[\r\n\0]/.test(secret)) throw new SecretError(`secret ${c.secret}: holds a line break or NUL, which no header can carry`);
    const value = c.format.replace(/\{base64\}|\{\}/g, (m) => (m === '{}' ? secret : Buffer.from(secret, 'utf8').toString('base64')));
    return { target: `${c.host}:${c.port}`, header: c.header, value, ...(c.caSecret !== null ? { ca: valueOf(c.caSecret) } : {}) };
  });
}
