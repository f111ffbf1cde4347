/**
 * resources.disk on a real two-node swarm (test/support/swarm.ts): a run's folders are on its
 * node, not on this host, so berth asks the node's engine to count them (GET /system/df, one count
 * per node per measure) instead of walking host paths. Four attempts write without end, into
 * their root file system (the task container's writable layer), their workspace (the run's
 * workspace volume, counted with the layer), /results (the run's results volume) and a volume of
 * the attempt; each ends Failed/DiskLimitExceeded close to its limit, its message naming the node's
 * engine as the counter, and so does one writing past its volume's own size (spec.volumes[].size),
 * while a neighbour with the same limit runs to Succeeded. The node's
 * engine counts files' sizes (empty files count nothing): a million empty files is caught on
 * one engine (disk-limit.test.ts), not here.
 */
import { expect } from 'chai';
import { Sandbox } from '../../support/sandbox';
import { nothingLeftOnSwarm, swarmCli } from '../../support/swarm-cli';
import { type TestSwarm, twoNodeSwarm } from '../../support/swarm';

const LIMIT_MIB = 64;
/** One interval of writing at about 20 MiB/s, the node's count and the stop, on a busy 2-core machine. */
const SLACK_MIB = 60;
const writer = (dir: string) => `mkdir -p ${dir}; i=0; while :; do dd if=/dev/zero of=${dir}/f$i bs=1M count=1 2>/dev/null; i=$((i+1)); sleep 0.05; done`;

describe('--backend swarm: resources.disk counted by the nodes (real two-node swarm)', function () {
  this.timeout(300_000);
  let s: TestSwarm;

  before(async () => {
    s = await twoNodeSwarm();
  });

  it('ends writers into the root fs, the workspace, /results and a volume DiskLimitExceeded near their limit; the neighbour succeeds', async () => {
    const sb = await Sandbox.create('sw-disk');
    try {
      const disk = `  workingDir: /workspace\n  resources: {disk: ${LIMIT_MIB}Mi}\n`;
      await sb.write(
        'disk.yaml',
        [
          sb.attempt('rootfs', writer('/fill'), disk),
          sb.attempt('workspace', writer('/workspace/fill'), disk),
          sb.attempt('results', writer('/results/fill'), disk),
          sb.attempt('volume', writer('/data'), `${disk}  volumes: [{name: data, mountPath: /data}]\n`),
          // a volume's own size, without resources.disk
          sb.attempt('sized', writer('/data'), '  workingDir: /workspace\n  volumes: [{name: data, mountPath: /data, size: 16Mi}]\n'),
          sb.attempt('neighbour', 'dd if=/dev/zero of=/results/some bs=1M count=8 2>/dev/null; sleep 4; echo ok > /results/ok', disk),
        ].join('---\n'),
      );
      const r = await swarmCli(sb, s, 'reconcile', '--once', '--wait', '--disk-interval', '1s', '--max-running', '6', '--timeout', '200s');
      expect(r.code, r.stderr).to.equal(3);
      expect(r.stdout).to.contain('1 passed, 5 failed, 0 infrastructure');
      const sized = await sb.status('sized');
      expect([sized?.phase, sized?.reason], sized?.message).to.deep.equal(['Failed', 'DiskLimitExceeded']);
      expect(sized?.message).to.match(/^volume data \(\/data\) holds \d+(\.\d)? MiB, over its size 16 MiB; counted by node .+'s engine$/);
      const neighbour = await sb.status('neighbour');
      expect([neighbour?.phase, neighbour?.reason], neighbour?.message).to.deep.equal(['Succeeded', 'Completed']);

      const where: Record<string, RegExp> = {
        rootfs: /writable layer (\d+(?:\.\d)?) (KiB|MiB)/,
        workspace: /writable layer (\d+(?:\.\d)?) (KiB|MiB)/,
        results: /results (\d+(?:\.\d)?) (KiB|MiB)/,
        volume: /volumes (\d+(?:\.\d)?) (KiB|MiB)/,
      };
      for (const name of Object.keys(where)) {
        const st = await sb.status(name);
        expect([st?.phase, st?.reason], `${name}: ${st?.message}`).to.deep.equal(['Failed', 'DiskLimitExceeded']);
        expect(st?.disk, name).to.deep.equal({ bytes: LIMIT_MIB * 1024 * 1024, source: 'spec', enforcedBy: 'measured' });
        const m = /^disk use (\d+(?:\.\d)?) MiB exceeds resources\.disk 64 MiB \(.*; counted by node .+'s engine\)$/.exec(st?.message ?? '');
        expect(m, `${name}: ${st?.message}`).to.not.equal(null);
        expect(Number(m?.[1]), `${name}: ${st?.message}`)
          .to.be.at.least(LIMIT_MIB)
          .and.at.most(LIMIT_MIB + SLACK_MIB);
        // the part the attempt wrote into holds (nearly) all of it
        const part = where[name]?.exec(st?.message ?? '');
        const partMib = Number(part?.[1]) / (part?.[2] === 'KiB' ? 1024 : 1);
        expect(partMib, `${name}: ${st?.message}`).to.be.above(LIMIT_MIB - 8);
      }
    } finally {
      const c = await swarmCli(sb, s, 'clean');
      expect(c.code, c.stderr).to.equal(0);
      await nothingLeftOnSwarm(s, sb.instance);
      await sb.dispose();
    }
  });
});
