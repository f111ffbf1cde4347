/**
 * The swarm backend's tcp probe (src/backend/swarm/reach.ts): its script, run here by this node
 * against ports of this machine's loopback, and what its exit codes say. On a swarm the same
 * script runs in a container in a sidecar's network namespace (test/engine/swarm/credentials.test.ts).
 */
import { execFile } from 'node:child_process';
import net from 'node:net';
import { expect } from 'chai';
import { PROBE_SCRIPT, probeAnswer } from '../../../src/backend/swarm/reach';
import { SwarmRuns } from '../../../src/backend/swarm/runs';
import { COMPONENTS, LABELS, SWARM } from '../../../src/constants';

/** The probe's answer for 127.0.0.1:port, tried for `ms`. */
function probe(port: number, ms: number, everyMs = 50): Promise<{ answer: string; tookMs: number }> {
  const t0 = Date.now();
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['-e', PROBE_SCRIPT, '127.0.0.1', String(port), String(ms), String(everyMs)], (err) => {
      const code = err ? (err as { code?: unknown }).code : 0;
      if (typeof code !== 'number') return reject(err ?? new Error('no exit code'));
      resolve({ answer: probeAnswer(code), tookMs: Date.now() - t0 });
    });
  });
}

/** A port nothing listens on (one was listened on and closed). */
async function closedPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe("swarm backend: the tcp probe run in a sidecar's network namespace", function () {
  this.timeout(20_000);

  it('answers at once for a port that accepts: its first try', async () => {
    let tries = 0;
    const s = net.createServer((c) => (tries++, c.destroy()));
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    try {
      const { answer } = await probe((s.address() as net.AddressInfo).port, 5000);
      expect([answer, tries]).to.deep.equal(['', 1]);
    } finally {
      s.close();
    }
  });

  it('keeps trying until the port accepts', async () => {
    const port = await closedPort();
    const s = net.createServer((c) => c.destroy());
    const later = setTimeout(() => s.listen(port, '127.0.0.1'), 600);
    try {
      const { answer, tookMs } = await probe(port, 8000);
      expect(answer).to.equal('');
      expect(tookMs).to.be.at.least(600);
    } finally {
      clearTimeout(later);
      s.close();
    }
  });

  it('says what the last try met once its time is up', async () => {
    const { answer, tookMs } = await probe(await closedPort(), 400);
    expect(answer).to.equal('ECONNREFUSED');
    expect(tookMs).to.be.at.least(400);
  });

  it('tries once even with no time left', async () => {
    expect((await probe(await closedPort(), 1)).answer).to.equal('ECONNREFUSED');
  });

  it('reads its exit codes', () => {
    expect(probeAnswer(0)).to.equal('');
    expect(probeAnswer(10)).to.equal('timed out');
    expect(probeAnswer(11)).to.equal('ECONNREFUSED');
    expect(probeAnswer(1)).to.equal('its probe ended with exit code 1');
    expect(probeAnswer(137)).to.equal('its probe ended with exit code 137');
  });
});

describe("swarm backend: a sidecar's tcp probe container left by a killed berth goes with its run", () => {
  /** A run's removal against fakes: its service (with `component`), no task, its node n1 holding a probe container labelled for it. */
  async function removeRun(component: string): Promise<{ removed: string[]; lists: string[][] }> {
    const removed: string[] = [];
    const lists: string[][] = [];
    const gone = () => Promise.reject(Object.assign(new Error('no such thing'), { statusCode: 404 }));
    const engine = {
      containers: {
        inspect: (name: string) => (name === 'side' ? Promise.resolve({ labels: { [SWARM.runLabel]: 'side' } }) : gone()),
        list: (filters: string[]) => {
          lists.push(filters);
          return Promise.resolve(filters.includes(`${SWARM.tcpProbeLabel}=side`) ? [{ id: 'probe-1' }] : []);
        },
        remove: (id: string) => Promise.resolve(void removed.push(id)).then(() => true),
      },
      volumes: { remove: () => Promise.resolve(true) },
    };
    const node = { id: 'n1', state: 'ready' };
    const swarm = {
      services: {
        inspect: () => Promise.resolve({ id: 's1', name: 'side', labels: { [LABELS.component]: component }, nodeId: 'n1', networks: [] }),
        remove: () => Promise.resolve(true),
      },
      tasks: { list: () => Promise.resolve([]) },
      networks: { inspect: gone },
      secrets: { list: () => Promise.resolve([]) },
    };
    const pool = {
      reachable: () => Promise.resolve([{ node, engine }]),
      all: () => Promise.resolve([node]),
      lost: () => false,
    };
    await new SwarmRuns(swarm as never, pool as never).remove('side@n1');
    return { removed, lists };
  }

  it('removes the probe containers labelled with a sidecar run', async () => {
    const { removed } = await removeRun(COMPONENTS.sidecar);
    expect(removed).to.include('probe-1');
  });

  it('does not look for them when removing a run that is no sidecar', async () => {
    const { removed, lists } = await removeRun(COMPONENTS.main);
    expect(removed).to.not.include('probe-1');
    expect(lists.flat().some((f) => f.startsWith(SWARM.tcpProbeLabel))).to.equal(false);
  });
});
