/**
 * The operations that make a sidecar (the egress proxy or a spec sidecar), one change to the
 * engine each (plan/ops.ts `sidecarOps` emits them in this order): `create-sidecar` (on the
 * attempt's internal network under its alias), `connect-sidecar` per further network,
 * `copy-in-sidecar` (its secrets' files), `start-sidecar`, and `ready-sidecar`: the wait until it
 * is ready (the egress proxy until its `listening` line, a sidecar until its `ready` probe passes
 * or, without one, until it has stayed up a moment), then its attestation. One that does not come up is reported `not-ready`; one made
 * again while the attempt runs is noted. What either means for the attempt is the planner's
 * (plan/follow-up.ts). The container the create made is addressed by its id (the executor hands
 * it on, `made`), else by its name.
 */
import net from 'node:net';
import { DEFAULTS } from '../constants';
import { attestInspected, failedCause, sidecarWant } from '../attest/checks';
import type { DesiredAttempt } from '../desired/types';
import { isConflict } from '../engine/errors';
import type { ContainerDetails } from '../engine/types';
import { stampNonce } from '../ownership';
import type { SidecarReady } from '../spec/types';
import type { AttemptAction, OpOutcome, SidecarOperation } from '../plan/types';
import { credentialSecretsOf } from '../desired/attempt';
import { parseListeningLine, PROXY_ENV, type SidecarListenerConfig } from '../proxy/contract';
import { secretsTar } from '../pack/archive';
import { containerHolder } from './conflict';
import { iso, type ExecContext } from './context';
import { containerUser } from './create';
import { DONE, outcomeOf } from './outcome';
import { credentialConfigs, readSecrets, secretEnvLines } from '../pack/secrets';

type Sidecar = DesiredAttempt['sidecars'][number];

function sidecarOf(op: SidecarOperation): Sidecar {
  const sc = op.desired.sidecars[op.index];
  if (!sc) throw new Error(`no sidecar ${op.index} in the desired state of ${op.desired.name}`);
  return sc;
}

/**
 * Runs one sidecar operation. `made`: the id of the container an earlier operation of the action
 * made for this resource, if any (the create's; the others fall back to the sidecar's name).
 */
export async function sidecarOp(x: ExecContext, a: AttemptAction, op: SidecarOperation, made: string | undefined): Promise<OpOutcome> {
  const sc = sidecarOf(op);
  const id = made ?? sc.name;
  switch (op.type) {
    case 'create-sidecar':
      return createSidecar(x, op.desired, sc);
    case 'connect-sidecar':
      await x.deps.engine.networks.connect(op.network, id);
      return DONE;
    case 'copy-in-sidecar':
      return copySecrets(x, op.desired, sc, id);
    case 'start-sidecar':
      await x.deps.engine.containers.start(id);
      return DONE;
    case 'ready-sidecar':
      return ready(x, a, op.index, sc, id, op.restart ?? false);
  }
}

/**
 * `create-sidecar`: its secrets read first (those opted into the environment go in the create; a
 * missing one blocks before the engine holds anything), then the create with a fresh nonce. A
 * name already held is reported with its holder (`conflict`), never judged here.
 */
async function createSidecar(x: ExecContext, d: DesiredAttempt, sc: Sidecar): Promise<OpOutcome> {
  const { engine } = x.deps;
  const secrets = await readSecrets(d.loaded.spec, x.deps.env, sc.secrets);
  const creds = await proxyEnvLines(d, x.deps.env, sc);
  const create = stampNonce({ ...sc.create, env: [...sc.create.env, ...secretEnvLines(sc.secretEnv, secrets), ...creds] });
  try {
    return { type: 'done', made: await engine.containers.create(create) };
  } catch (err) {
    if (!isConflict(err)) throw err;
    const existing = await engine.containers.inspect(sc.name);
    return { type: 'conflict', kind: 'container', name: sc.name, id: existing.id, owner: await containerHolder(x, existing) };
  }
}

/**
 * The egress proxy's settings that hold secret values, read now: the attempt's credentials
 * (PROXY_ENV.credentials) and the sidecars' listeners (PROXY_ENV.sidecars); none without them.
 */
async function proxyEnvLines(d: DesiredAttempt, env: NodeJS.ProcessEnv, sc: Sidecar): Promise<string[]> {
  if (sc.credentials.length === 0 && sc.listeners.length === 0) return [];
  const values = await readSecrets(d.loaded.spec, env, credentialSecretsOf(sc.credentials));
  const own = d.loaded.spec.credentials;
  const sidecars = sc.listeners.map((l): SidecarListenerConfig => ({
    name: l.name,
    port: l.port,
    source: l.source,
    allow: l.egress,
    credentials: credentialConfigs(l.credentials, values),
  }));
  return [
    ...(own.length > 0 ? [`${PROXY_ENV.credentials}=${JSON.stringify(credentialConfigs(own, values))}`] : []),
    ...(sidecars.length > 0 ? [`${PROXY_ENV.sidecars}=${JSON.stringify(sidecars)}`] : []),
  ];
}

/** `copy-in-sidecar`: the sidecar's secrets' files under /run/secrets (0400, its image's user), read now. */
async function copySecrets(x: ExecContext, d: DesiredAttempt, sc: Sidecar, id: string): Promise<OpOutcome> {
  try {
    const secrets = await readSecrets(d.loaded.spec, x.deps.env, sc.secrets);
    if (!secrets.length) return DONE;
    const { uid, gid } = await containerUser(x, sc.create.image);
    await x.deps.engine.containers.putArchive(id, '/', await secretsTar(secrets, DEFAULTS.secretsDir, uid, gid));
    return DONE;
  } catch (err) {
    return outcomeOf(err, id);
  }
}

/**
 * `ready-sidecar`: waits until the started sidecar is ready, then attests its inspection; one that
 * is not is `not-ready`, with what went wrong. Made again while the attempt runs (`restart`), it
 * is noted in the record's warnings.
 */
async function ready(x: ExecContext, a: AttemptAction, index: number, sc: Sidecar, id: string, restart: boolean): Promise<OpOutcome> {
  const { engine } = x.deps;
  let st: ContainerDetails | undefined;
  let problem: string | undefined;
  if (sc.ready === 'listening') {
    problem = await untilListening(x, id);
    st = await engine.containers.inspect(id).catch((err: unknown) => (problem ? undefined : Promise.reject(err)));
    if (problem && st && !st.runState.running) problem = `${problem} (exit code ${st.runState.exitCode})`;
  } else if (sc.ready === 'running') {
    // no `ready` in the spec: the documented fallback
    await new Promise((r) => setTimeout(r, DEFAULTS.sidecarSettleMs));
    st = await engine.containers.inspect(id);
    if (!st.runState.running) problem = `exited right after its start (exit code ${st.runState.exitCode})`;
  } else {
    problem = await probeReady(x, sc, id, sc.ready);
    st = await engine.containers.inspect(id).catch((err: unknown) => (problem ? undefined : Promise.reject(err)));
    if (problem && st && !st.runState.running) problem = `${problem} (it exited, code ${st.runState.exitCode})`;
  }
  const bad = problem ?? (st ? failedCause(attestInspected(st, sidecarWant(sc))) : undefined);
  if (bad) return { type: 'not-ready', index, id: st?.id ?? id, message: bad };
  if (restart) {
    await x.records.update(a, (r) => ({ ...r, warnings: [...(r.warnings ?? []), `${iso(x.now())}: ${sc.alias} was restarted while the attempt ran`] }));
  }
  return DONE;
}

/** Follows the proxy's logs until its `listening` line: undefined, or what went wrong. */
function untilListening(x: ExecContext, id: string): Promise<string | undefined> {
  return untilOutput(x, id, DEFAULTS.egressProxyReadySeconds, (line) => !!parseListeningLine(line), {
    late: `did not say it was listening within ${DEFAULTS.egressProxyReadySeconds} s`,
    ended: 'exited before it said it was listening',
  });
}

/**
 * A sidecar's `ready` probe, until it passes or its deadline: undefined, or what went wrong.
 * tcp: berth connects to the port at the sidecar's address on the attempt's network (one engine
 * on this machine), or the backend does from the sidecar's network namespace (probeTcp: a
 * swarm's overlays, which berth cannot reach); log: a line of its output holds
 * the text; command: run in it by the engine until it exits 0. A sidecar that exits fails at once.
 */
async function probeReady(x: ExecContext, sc: Sidecar, id: string, r: SidecarReady): Promise<string | undefined> {
  const deadline = Date.now() + r.deadlineSeconds * 1000;
  const within = `within ${r.deadlineSeconds} s`;
  if ('log' in r) return untilLogSays(x, id, r.log, r.deadlineSeconds);
  const { engine } = x.deps;
  const exec = engine.containers.exec.bind(engine.containers);
  // a backend whose containers' addresses berth cannot reach probes from the sidecar's own network namespace
  const probeTcp = engine.remote?.probeTcp.bind(engine.remote);
  let last = '';
  let answered = '';
  for (;;) {
    const st = await engine.containers.inspect(id);
    if (!st.runState.running) return `exited before it was ready (exit code ${st.runState.exitCode})`;
    const left = deadline - Date.now();
    if ('tcp' in r) {
      const addr = st.addresses?.[sc.create.host.networkMode];
      if (!addr) return `has no address on ${sc.create.host.networkMode} to probe port ${r.tcp} at`;
      last = probeTcp
        ? await probeTcp(id, addr, r.tcp, Math.max(1, Math.min(DEFAULTS.sidecarBackendProbeMs, left)), DEFAULTS.sidecarProbeIntervalMs).catch(
            (err: unknown) => `its probe failed: ${(err as Error).message}`,
          )
        : await tcpAccepts(addr, r.tcp, Math.max(1, Math.min(1000, left)));
      if (last === '') return undefined;
    } else if (exec) {
      const code = await exec(id, r.command, Math.max(1, left)).catch((err: unknown) => `failed (${(err as Error).message})`);
      if (code === 0) return undefined;
      // what the command last said; a try that did not get an answer (the deadline's last moments
      // cut it short) is told only when none ever came
      if (typeof code === 'number') answered = last = `exit code ${code}`;
      else last = answered || code;
    }
    if (Date.now() + DEFAULTS.sidecarProbeIntervalMs >= deadline) {
      return 'tcp' in r ? `port ${r.tcp} did not accept ${within} (${last})` : `its ready command did not exit 0 ${within} (last: ${last})`;
    }
    await new Promise((res) => setTimeout(res, DEFAULTS.sidecarProbeIntervalMs));
  }
}

/** '' when `host:port` accepts a TCP connection within `ms`, else the error's code. */
function tcpAccepts(host: string, port: number, ms: number): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect({ host, port });
    const done = (why: string): void => {
      clearTimeout(t);
      s.destroy();
      resolve(why);
    };
    const t = setTimeout(() => done('timed out'), ms);
    s.once('connect', () => done(''));
    s.once('error', (err: NodeJS.ErrnoException) => done(err.code ?? 'error'));
  });
}

/** Follows the sidecar's output until a line holds `text`: undefined, or what went wrong. */
function untilLogSays(x: ExecContext, id: string, text: string, seconds: number): Promise<string | undefined> {
  return untilOutput(
    x,
    id,
    seconds,
    (line) => line.includes(text),
    { late: `its output did not say ${JSON.stringify(text)} within ${seconds} s`, ended: `exited before its output said ${JSON.stringify(text)}` },
    // a line still being written counts too; one longer than any text worth waiting for is not kept whole
    { partial: true, keep: text.length },
  );
}

/**
 * Follows a container's output until `seen` holds for one of its lines (with `partial`, the line
 * still being written counts too), for at most `seconds`: undefined, or what went wrong. With
 * `keep`, a line past 64 KiB keeps only its last `keep` characters.
 */
async function untilOutput(
  x: ExecContext,
  id: string,
  seconds: number,
  seen: (line: string) => boolean,
  why: { late: string; ended: string },
  o: { partial?: boolean; keep?: number } = {},
): Promise<string | undefined> {
  const stream = await x.deps.engine.containers.logs(id, { follow: true });
  return new Promise<string | undefined>((resolve) => {
    let buf = '';
    const t = setTimeout(() => done(why.late), seconds * 1000);
    const done = (v: string | undefined) => {
      clearTimeout(t);
      stream.destroy();
      resolve(v);
    };
    stream.on('data', (c: Buffer) => {
      buf += c.toString('utf8');
      const lines = buf.split('\n');
      buf = lines.pop() ?? '';
      if (lines.some(seen) || (o.partial && seen(buf))) return done(undefined);
      if (o.keep !== undefined && buf.length > 64 * 1024) buf = buf.slice(-o.keep);
    });
    stream.on('end', () => done(o.partial && seen(buf) ? undefined : why.ended));
    stream.on('error', (err: Error) => done(`log stream failed: ${err.message}`));
  });
}
