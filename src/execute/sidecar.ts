/**
 * The `create-sidecar` operation: a sidecar created on the attempt's internal network under its
 * alias, attached to its other networks, given its secrets, started, and waited for: the egress
 * proxy until its `listening` line, a sidecar until it has stayed up a moment. One that does not
 * come up is reported `not-ready`; one restarted while the attempt runs is noted. What either
 * means for the attempt is the planner's (plan/follow-up.ts).
 */
import { DEFAULTS } from '../constants';
import { attestInspected, failedCause, sidecarWant } from '../attest/checks';
import type { DesiredAttempt } from '../desired/types';
import { isConflict } from '../engine/errors';
import { stampNonce } from '../ownership';
import type { AttemptAction, OpOutcome } from '../plan/types';
import { parseListeningLine } from '../proxy/contract';
import { secretsTar } from './archive';
import { containerHolder } from './conflict';
import { iso, type ExecContext } from './context';
import { containerUser } from './create';
import { DONE } from './outcome';
import { readSecrets, secretEnvLines } from './secrets';

export async function createSidecar(x: ExecContext, a: AttemptAction, d: DesiredAttempt, index: number, restart: boolean): Promise<OpOutcome> {
  const { engine } = x.deps;
  const sc = d.sidecars[index];
  if (!sc) throw new Error(`no sidecar ${index} in the desired state of ${d.name}`);
  const secrets = await readSecrets(d.loaded.spec, x.deps.env, sc.secrets);
  const create = stampNonce({ ...sc.create, env: [...sc.create.env, ...secretEnvLines(sc.secretEnv, secrets)] });
  let id: string;
  try {
    id = await engine.containers.create(create);
  } catch (err) {
    if (!isConflict(err)) throw err;
    const existing = await engine.containers.inspect(sc.name);
    return { type: 'conflict', kind: 'container', name: sc.name, id: existing.id, owner: await containerHolder(x, existing) };
  }
  for (const net of sc.expectedNetworks) {
    if (net !== sc.create.host.networkMode) await engine.networks.connect(net, id);
  }
  if (secrets.length) {
    const { uid, gid } = await containerUser(x, sc.create.image);
    await engine.containers.putArchive(id, '/', await secretsTar(secrets, DEFAULTS.secretsDir, uid, gid));
  }
  const problem = await startAndWait(x, id, sc.ready);
  const bad = problem ?? failedCause(attestInspected(await engine.containers.inspect(id), sidecarWant(sc)));
  if (bad) return { type: 'not-ready', index, id, message: bad };
  if (restart) {
    await x.records.update(a, (r) => ({ ...r, warnings: [...(r.warnings ?? []), `${iso(x.now())}: ${sc.alias} was restarted while the attempt ran`] }));
  }
  return DONE;
}

/** Starts a container and waits until it is ready; returns what went wrong, or undefined. */
async function startAndWait(x: ExecContext, id: string, ready: 'listening' | 'running'): Promise<string | undefined> {
  const { engine } = x.deps;
  await engine.containers.start(id);
  if (ready === 'listening') {
    const deadline = DEFAULTS.egressProxyReadySeconds * 1000;
    const stream = await engine.containers.logs(id, { follow: true });
    const seen = await new Promise<string | undefined>((resolve) => {
      let buf = '';
      const t = setTimeout(() => done(`did not say it was listening within ${DEFAULTS.egressProxyReadySeconds} s`), deadline);
      const done = (v: string | undefined) => {
        clearTimeout(t);
        stream.destroy();
        resolve(v);
      };
      stream.on('data', (c: Buffer) => {
        buf += c.toString('utf8');
        for (const line of buf.split('\n').slice(0, -1)) if (parseListeningLine(line)) return done(undefined);
        buf = buf.slice(buf.lastIndexOf('\n') + 1);
      });
      stream.on('end', () => done('exited before it said it was listening'));
      stream.on('error', (err: Error) => done(`log stream failed: ${err.message}`));
    });
    if (seen) {
      const st = await engine.containers.inspect(id).catch(() => undefined);
      return st && !st.runState.running ? `${seen} (exit code ${st.runState.exitCode})` : seen;
    }
    return undefined;
  }
  await new Promise((r) => setTimeout(r, DEFAULTS.sidecarSettleMs));
  const st = await engine.containers.inspect(id);
  return st.runState.running ? undefined : `exited right after its start (exit code ${st.runState.exitCode})`;
}
