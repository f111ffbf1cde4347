/**
 * The HTTP API of `berth reconcile` (src/api/server.ts), started by the controller and by
 * `reconcile --once --wait` once they hold the instance: its flags checked, its token read, its
 * attempts' items made as `get -o json` makes them.
 */
import { readFile, stat } from 'node:fs/promises';
import { API } from '../../constants';
import type { ApiController, ApiServer } from '../../api/server';
import type * as ApiServerMod from '../../api/server';
import type { Engine } from '../../engine/types';
import type { StatusStore } from '../../status/store';
import { UsageError, type Context } from '../context';
import { parseAddr } from '../../util/addr';
import { diag } from '../diag';
import { toItem } from './get-item';
import { rowOf, withTouched } from './get';

export interface ApiFlags {
  /** `--api-addr HOST:PORT`: the API on TCP too, with the token of `--api-token-file`. */
  apiAddr?: string;
  apiTokenFile?: string;
  /** `--api-max-output` (bytes). */
  apiMaxOutput?: number;
  /** How long a client may take nothing of its answer (no flag; tests): API.idleMs. */
  apiIdleMs?: number;
}

/** The flags checked and the token read, before anything starts: undefined without --api-addr. */
export async function apiToken(ctx: Context, o: ApiFlags): Promise<string | undefined> {
  if (o.apiAddr === undefined) {
    if (o.apiTokenFile !== undefined) throw new UsageError('--api-token-file goes with --api-addr (the Unix socket needs no token: its mode is 0600)');
    return undefined;
  }
  let host: string;
  try {
    host = parseAddr(o.apiAddr, '--api-addr', '127.0.0.1:9465').host;
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  if (!isLoopback(host)) {
    throw new UsageError(
      `--api-addr ${o.apiAddr}: the API listens on loopback only (127.0.0.1, ::1, localhost): it runs commands in the attempts; reach it from elsewhere through a tunnel or a proxy of your own`,
    );
  }
  if (o.apiTokenFile === undefined) throw new UsageError('--api-addr needs --api-token-file: every request on TCP must carry its bearer token');
  const file = o.apiTokenFile;
  const token = await readFile(file, 'utf8').then(
    (s) => s.trim(),
    () => {
      throw new UsageError(`--api-token-file ${file}: cannot be read`);
    },
  );
  if (token.length < 16) throw new UsageError(`--api-token-file ${file}: the token must be at least 16 characters`);
  const st = await stat(file);
  if ((st.mode & 0o077) !== 0) diag(ctx, 'warn', `--api-token-file ${file} can be read by others (mode ${(st.mode & 0o777).toString(8)}): chmod 600 it`);
  return token;
}

/** 127.0.0.0/8, ::1 (also as ::ffff:127.x) or localhost: the only hosts --api-addr takes. */
export function isLoopback(host: string): boolean {
  const h = host.toLowerCase();
  if (h === 'localhost' || h === '::1' || h === '0:0:0:0:0:0:0:1') return true;
  const v4 = /^(?:::ffff:)?(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(h);
  return !!v4 && v4.slice(1).every((n) => Number(n) <= 255) && v4[1] === '127';
}

export async function startApi(
  ctx: Context,
  o: ApiFlags,
  token: string | undefined,
  on: { controller: ApiController; engine: Engine; store: StatusStore; git: boolean },
): Promise<ApiServer> {
  const { serveApi } = require('../../api/server') as typeof ApiServerMod;
  const server = await serveApi({
    stateDir: ctx.stateDir,
    instance: ctx.instance,
    specsDir: ctx.specsDir,
    resultsRoot: ctx.resultsRoot,
    env: ctx.env,
    engine: on.engine,
    store: on.store,
    log: ctx.log,
    controller: on.controller,
    git: on.git,
    maxOutputBytes: o.apiMaxOutput ?? API.maxOutputBytes,
    ...(o.apiIdleMs !== undefined ? { idleMs: o.apiIdleMs } : {}),
    ...(o.apiAddr !== undefined && token !== undefined ? { tcp: { addr: o.apiAddr, token } } : {}),
    item: async (name) => {
      const load = on.controller.latestLoad();
      const loaded = load?.specs.find((s) => s.spec.name === name);
      const st = await on.store.get(name);
      const damaged = st ? undefined : on.store.damagedRecordOf(name);
      if (!loaded && !st && !damaged) return undefined;
      const row = rowOf(ctx.specsDir, load ?? emptyLoad(), loaded, name, st, () => damaged, Date.now());
      return toItem(await withTouched(row, ctx.resultsRoot));
    },
  });
  ctx.log.info(`API on ${server.socket}${server.url ? ` and ${server.url} (bearer token)` : ''}`);
  return server;
}

function emptyLoad(): Parameters<typeof rowOf>[1] {
  return { specs: [], errors: [], protectedNames: new Set(), files: [], documents: 0 } as unknown as Parameters<typeof rowOf>[1];
}
