/**
 * Deep attestation of a run, by inspect: the main container and every sidecar, and the
 * topology: exactly the attempt's containers on its internal network, and the proxy alone on
 * the egress network berth made for it. The `attest` operation records it; a failed one is
 * reported with the attempt's sidecars as found (`attestation-failed`): stopping and ending the
 * run is the planner's (plan/follow-up.ts).
 */
import { attestInspected, failedCause, mainWant, sidecarWant } from '../attest/checks';
import type { DesiredAttempt } from '../desired/types';
import { isNotFound } from '../engine/errors';
import type { ContainerDetails } from '../engine/types';
import type { AttemptAction, OpOutcome, Operation, SidecarRef } from '../plan/types';
import type { Attestation } from '../status/types';
import { iso, type ExecContext } from './context';
import { DONE } from './outcome';

/** `imageId`: the id the run's record says its container was made from (mainWant). */
export async function attestation(x: ExecContext, details: ContainerDetails, d: DesiredAttempt, imageId?: string): Promise<Attestation> {
  const { engine } = x.deps;
  const checks = attestInspected(details, mainWant(d, imageId));
  for (const sc of d.sidecars) {
    const o = await engine.containers.inspect(sc.name).catch((err: unknown) => {
      if (isNotFound(err)) return undefined;
      throw err;
    });
    if (!o) {
      checks.push({ name: `${sc.alias}`, ok: false, detail: `${sc.alias}: container ${sc.name} is missing` });
      continue;
    }
    checks.push(...attestInspected(o, sidecarWant(sc)).map((c) => ({ ...c, name: `${sc.alias}: ${c.name}`, detail: `${sc.alias}: ${c.detail}` })));
  }
  const ids = async (names: string[]) =>
    (
      await Promise.all(
        names.map((n) =>
          engine.containers.inspect(n).then(
            (c) => c.id,
            () => n,
          ),
        ),
      )
    ).sort();
  if (d.network) {
    const members = [d.container.name, ...d.sidecars.map((sc) => sc.name)];
    const want = await ids(members);
    const net = await engine.networks.inspect(d.network.name);
    const extra = net.containers.filter((c) => !want.includes(c));
    checks.push({
      name: 'topology',
      ok: net.internal && extra.length === 0,
      detail: !net.internal
        ? `${net.name} is not internal`
        : extra.length
          ? `${net.name} holds containers that are not the attempt's: ${extra.map((x) => x.slice(0, 12)).join(', ')}`
          : `${net.name} is internal and holds only the attempt's ${members.length} container${members.length === 1 ? '' : 's'}`,
    });
  }
  const proxy = d.sidecars.find((sc) => sc.role === 'egress-proxy');
  if (proxy && d.egressNetwork) {
    const want = await ids([proxy.name]);
    const net = await engine.networks.inspect(d.egressNetwork.name);
    const extra = net.containers.filter((c) => !want.includes(c));
    checks.push({
      name: 'egress topology',
      ok: extra.length === 0,
      detail: extra.length
        ? `${net.name} holds containers besides the proxy: ${extra.map((x) => x.slice(0, 12)).join(', ')}`
        : `the proxy is the only container on ${net.name}`,
    });
  }
  return { at: iso(x.now()), depth: 'inspect', ok: checks.every((c) => c.ok), checks };
}

/** `done` for an attestation that passed; else the failure, with the attempt's sidecars that exist. */
export async function attestationOutcome(x: ExecContext, att: Attestation, id: string, d: DesiredAttempt): Promise<OpOutcome> {
  if (att.ok) return DONE;
  const sidecars: SidecarRef[] = [];
  for (const sc of d.sidecars) {
    const o = await x.deps.engine.containers.inspect(sc.name).catch(() => undefined);
    if (o) sidecars.push({ alias: sc.alias, role: sc.role, id: o.id });
  }
  return { type: 'attestation-failed', id, cause: failedCause(att.checks) ?? 'attestation failed', sidecars };
}

/** The `attest` operation: inspect, attest, record. */
export async function attest(x: ExecContext, a: AttemptAction, { id, desired: d }: Extract<Operation, { type: 'attest' }>): Promise<OpOutcome> {
  const details = await x.deps.engine.containers.inspect(id);
  const rec = await x.records.current(a);
  const att = await attestation(x, details, d, rec.run === d.run ? rec.image?.id : undefined);
  await x.records.update(a, (r) => ({ ...r, lastAttestation: att }));
  return attestationOutcome(x, att, id, d);
}
