/**
 * Registry credentials, found as the `docker` CLI finds them (docs/CONTRACT.md "Images from
 * registries"): the config file (`--registry-config FILE`, `BERTH_REGISTRY_CONFIG`, else
 * `$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`), its `credHelpers[host]`, else its
 * `credsStore`, through `docker-credential-<name> get` (the registry on its stdin, never in argv),
 * else its `auths[host]` (`auth`, or `username`/`password`, or `identitytoken`).
 *
 * A credential goes to the engine only (X-Registry-Auth) and, on a swarm, with the service. It
 * is never logged, recorded, labeled or put in an error: every value this module hands out is
 * also kept for the redactor (`secretValues()`), which scrubs anything berth writes of a pull.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { RegistryAuth } from '../engine/types';
import type { SecretValue } from '../util/redact';
import { DOCKER_HUB_AUTH_KEY, registryOf } from './reference';

/** How long a credential helper may take. */
const HELPER_TIMEOUT_MS = 10_000;
/** A helper's answer is asked again after this long (a token it rotates). */
const HELPER_TTL_MS = 60_000;

interface ConfigFile {
  auths?: Record<string, { auth?: string; username?: string; password?: string; identitytoken?: string }>;
  credHelpers?: Record<string, string>;
  credsStore?: string;
}

/** Runs `docker-credential-<name> get` with `server` on stdin; resolves with its stdout. Tests give their own. */
export type HelperRunner = (helper: string, server: string, env: NodeJS.ProcessEnv) => Promise<string>;

const runHelper: HelperRunner = (helper, server, env) =>
  new Promise((resolve, reject) => {
    const child = execFile(`docker-credential-${helper}`, ['get'], { env, timeout: HELPER_TIMEOUT_MS, maxBuffer: 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) {
        // its stderr and stdout may say why (never the secret: a failed get prints none); bounded
        const why = String(stdout || stderr || err.message)
          .replace(/\s+/g, ' ')
          .trim()
          .slice(0, 200);
        reject(new CredentialError(`credential helper docker-credential-${helper} failed for ${server}: ${why}`));
      } else resolve(String(stdout));
    });
    child.stdin?.end(server);
  });

/** A credential that could not be read (the file, a helper): says where, never what. */
export class CredentialError extends Error {
  readonly code = 'REGISTRY_CREDENTIAL';
  constructor(message: string) {
    super(message);
    this.name = 'CredentialError';
  }
}

export { registryConfigPath } from './config-path';

/** A key of `auths` or `credHelpers` as the docker CLI compares them: the host, without scheme or path. */
export function hostKey(key: string): string {
  return key.replace(/^[a-z]+:\/\//i, '').replace(/\/.*$/, '');
}

export interface CredentialsOptions {
  /** The config file (registryConfigPath). */
  file: string;
  env: NodeJS.ProcessEnv;
  run?: HelperRunner;
  now?: () => number;
}

export class RegistryCredentials {
  private readonly run: HelperRunner;
  private readonly now: () => number;
  private readonly helped = new Map<string, { at: number; auth: RegistryAuth | undefined }>();
  private readonly values = new Map<string, Buffer>();

  constructor(private readonly o: CredentialsOptions) {
    this.run = o.run ?? runHelper;
    this.now = o.now ?? Date.now;
  }

  /** Where credentials are read from (for messages: a path, never a value). */
  get file(): string {
    return this.o.file;
  }

  /** The file as it is now ({} when there is none: no credential, pulls go without one). */
  private read(): ConfigFile {
    let text: string;
    try {
      text = readFileSync(this.o.file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
      throw new CredentialError(`cannot read registry config ${this.o.file}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
    }
    try {
      const v = JSON.parse(text) as unknown;
      return typeof v === 'object' && v !== null ? (v as ConfigFile) : {};
    } catch {
      throw new CredentialError(`registry config ${this.o.file} is not valid JSON`);
    }
  }

  /** The credential for the registry of image `ref`, or undefined (an anonymous pull). */
  async forImage(ref: string): Promise<RegistryAuth | undefined> {
    return this.forRegistry(registryOf(ref));
  }

  /** The credential for registry `host` (`host:port`, or `docker.io`). */
  async forRegistry(host: string): Promise<RegistryAuth | undefined> {
    const cfg = this.read();
    const server = host === 'docker.io' ? DOCKER_HUB_AUTH_KEY : host;
    const helpers = Object.entries(cfg.credHelpers ?? {});
    const helper = helpers.find(([k]) => hostKey(k) === hostKey(server))?.[1] ?? cfg.credsStore;
    if (helper) return this.fromHelper(helper, server);
    const entry = Object.entries(cfg.auths ?? {}).find(([k]) => hostKey(k) === hostKey(server))?.[1];
    if (!entry) return undefined;
    let username = entry.username;
    let password = entry.password;
    if (entry.auth) {
      const plain = Buffer.from(entry.auth, 'base64').toString('utf8');
      const at = plain.indexOf(':');
      if (at < 0) throw new CredentialError(`registry config ${this.o.file}: the auth of ${host} is not base64 of user:password`);
      username = plain.slice(0, at);
      password = plain.slice(at + 1);
      this.keep(`${host}-auth`, entry.auth);
    }
    const auth: RegistryAuth = { serveraddress: server };
    if (username) auth.username = username;
    if (password) auth.password = this.keep(host, password);
    if (entry.identitytoken) auth.identitytoken = this.keep(`${host}-token`, entry.identitytoken);
    return auth.password !== undefined || auth.identitytoken !== undefined ? auth : undefined;
  }

  private async fromHelper(helper: string, server: string): Promise<RegistryAuth | undefined> {
    if (!/^[A-Za-z0-9._-]+$/.test(helper))
      throw new CredentialError(`registry config ${this.o.file}: credential helper name ${JSON.stringify(helper)} is not a plain name`);
    const key = `${helper}\0${server}`;
    const kept = this.helped.get(key);
    if (kept && this.now() - kept.at < HELPER_TTL_MS) return kept.auth;
    let out: string;
    try {
      out = await this.run(helper, server, this.o.env);
    } catch (err) {
      // the helper has none for this registry: an anonymous pull (as the docker CLI does)
      if (err instanceof CredentialError && /credentials not found/i.test(err.message)) {
        this.helped.set(key, { at: this.now(), auth: undefined });
        return undefined;
      }
      throw err instanceof CredentialError ? err : new CredentialError(`credential helper docker-credential-${helper} failed for ${server}`);
    }
    let v: { Username?: string; Secret?: string };
    try {
      v = JSON.parse(out) as { Username?: string; Secret?: string };
    } catch {
      throw new CredentialError(`credential helper docker-credential-${helper} gave no JSON for ${server}`);
    }
    let auth: RegistryAuth | undefined;
    if (v.Secret) {
      const secret = this.keep(`${hostKey(server)}-helper`, v.Secret);
      auth =
        v.Username === '<token>' ? { serveraddress: server, identitytoken: secret } : { serveraddress: server, username: v.Username ?? '', password: secret };
    }
    this.helped.set(key, { at: this.now(), auth });
    return auth;
  }

  private keep(name: string, value: string): string {
    this.values.set(`registry-${name}`, Buffer.from(value));
    return value;
  }

  /** Every credential value handed out so far, for a redactor (named `registry-<host>`). */
  secretValues(): SecretValue[] {
    return [...this.values].map(([name, value]) => ({ name, value }));
  }
}

/**
 * X-Registry-Config for a build: the credential of each FROM image's registry, found as the
 * puller finds it. Sent to the engine in the build request's header only; the builder pulls with
 * it only a FROM image berth's pull did not leave it (one of another `--platform`).
 */
export async function buildRegistryConfig(credentials: RegistryCredentials, refs: readonly string[]): Promise<Record<string, RegistryAuth>> {
  const out: Record<string, RegistryAuth> = {};
  for (const ref of refs) {
    const auth = await credentials.forImage(ref).catch(() => undefined);
    if (auth) out[auth.serveraddress] = auth;
  }
  return out;
}
