/**
 * A TCP port on an attempt's overlay, tried from the overlay: berth cannot reach an overlay's
 * addresses from where it runs (they live inside the nodes), so a sidecar's `ready: {tcp}` is
 * tried by a container on the sidecar's node, in the network namespace of the sidecar's task
 * container. It is on the sidecar's networks without joining any (the attempt's network gains no
 * member, its topology is unchanged) and connects to the sidecar's address there, as berth does
 * on one engine. The container runs berth's egress proxy image (its node: on every node, the
 * hardening probe runs it too), read-only, without capabilities, as nobody; it tries every
 * `everyMs` until the port accepts or its time is up, then ends and the node removes it
 * (AutoRemove: a berth killed meanwhile leaves nothing once that time has passed; one killed
 * between the create and the start leaves a container that is removed with the sidecar's run,
 * by its SWARM.tcpProbeLabel: runs.ts). Its answer is its exit code: 0 accepted, else the last
 * try's error.
 */
import { hostname } from 'node:os';
import type Dockerode from 'dockerode';
import { LABELS, SWARM } from '../../constants';
import type { Labels } from '../../engine/types';

/** The errors a try can meet, by the exit code that tells each (1: any other). */
const CODES = ['timed out', 'ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNRESET', 'EADDRNOTAVAIL'] as const;
const FIRST = 10;

/**
 * argv: host, port, ms, everyMs. A try is started every everyMs while ms has not passed (the
 * first at once), each given 1 s to connect. Exit 0 once a connection is accepted; else FIRST +
 * the last try's error's index in CODES, or 1.
 */
export const PROBE_SCRIPT = `
const net = require('net');
const [host, port, ms, every] = process.argv.slice(1);
const codes = ${JSON.stringify(CODES)};
const end = Date.now() + Number(ms);
let last = 'timed out';
const stop = () => process.exit(codes.includes(last) ? ${FIRST} + codes.indexOf(last) : 1);
const next = () => { const left = end - Date.now(); if (left <= 0) return stop(); setTimeout(once, Math.min(Number(every), left)); };
function once() {
  const s = net.connect({ host, port: Number(port) });
  const t = setTimeout(() => { s.destroy(); last = 'timed out'; next(); }, 1000);
  s.once('connect', () => { clearTimeout(t); s.destroy(); process.exit(0); });
  s.once('error', (e) => { clearTimeout(t); last = e.code || 'error'; next(); });
}
once();
`;

/** What an exit code of the probe says: '' accepted, else the last try's error. */
export function probeAnswer(code: number): string {
  if (code === 0) return '';
  return CODES[code - FIRST] ?? `its probe ended with exit code ${code}`;
}

/** How long past its own time the probe container may take to start and end before berth gives up on it. */
const SLACK_MS = 30_000;

/**
 * Tries `host:port` from the network namespace of `container` (a task's container on the node
 * `docker` is the engine of) until it accepts or `ms` has passed: '' when it did, else what the
 * last try met. `labels`: berth's labels for the probe container (the run's owner labels and
 * SWARM.tcpProbeLabel).
 */
export async function probeTcpFrom(
  docker: Dockerode,
  container: string,
  image: string,
  target: { host: string; port: number; ms: number; everyMs: number },
  labels: Labels,
): Promise<string> {
  let made: Dockerode.Container | undefined;
  const work = (async () => {
    made = await docker.createContainer({
      Image: image,
      Entrypoint: ['/usr/bin/node', '-e', PROBE_SCRIPT],
      Cmd: [target.host, String(target.port), String(Math.max(1, Math.round(target.ms))), String(Math.max(1, Math.round(target.everyMs)))],
      User: '65534:65534',
      WorkingDir: '/',
      Env: [],
      Labels: { ...labels, [LABELS.managed]: 'true', [SWARM.probeOwnerLabel]: `${hostname()}/${process.pid}` },
      HostConfig: {
        NetworkMode: `container:${container}`,
        AutoRemove: true,
        ReadonlyRootfs: true,
        CapDrop: ['ALL'],
        SecurityOpt: ['no-new-privileges'],
        PidsLimit: 16,
        Memory: 128 * 1024 * 1024,
        LogConfig: { Type: 'none', Config: {} },
      },
    });
    // asked before the start, so its end is never missed; it answers once the node removed it
    const ended = made.wait({ condition: 'removed' }) as Promise<{ StatusCode: number }>;
    ended.catch(() => undefined);
    await made.start();
    return (await ended).StatusCode;
  })();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    const ms = target.ms + SLACK_MS;
    timer = setTimeout(() => reject(new Error(`the tcp probe on its node did not end within ${Math.round(ms / 1000)} s`)), ms);
  });
  try {
    return probeAnswer(await Promise.race([work, late]));
  } catch (err) {
    // the node's engine refused or hung: the probe container goes, also one whose create answers later
    void work
      .then(
        () => undefined,
        () => undefined,
      )
      .finally(() => made?.remove({ force: true }).catch(() => undefined));
    throw err;
  } finally {
    clearTimeout(timer);
  }
}
