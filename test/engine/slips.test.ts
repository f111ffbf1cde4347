/**
 * What a user's slip never does (CONTRACT.md, "What a mistake never does"), on the real engine:
 * a wrong specs path or an empty folder never removes a running fleet, a run folder is never
 * reused, times are the engine's, an Invalid attempt says why, and names never collide.
 */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { LABELS } from '../../src/constants';
import { docker, requireEngine, TEST_RUN } from '../support/engine';
import { Sandbox } from '../support/sandbox';

async function mainContainers(sb: Sandbox): Promise<{ name: string; state: string; attempt: string }[]> {
  const list = await docker.listContainers({
    all: true,
    filters: JSON.stringify({ label: [`${LABELS.instance}=${sb.instance}`, `${LABELS.component}=main`] }),
  });
  return list
    .map((c) => ({ name: (c.Names[0] ?? '').slice(1), state: c.State, attempt: c.Labels[LABELS.attempt] ?? '' }))
    .sort((a, b) => (a.attempt < b.attempt ? -1 : 1));
}

describe('a user slip never costs a fleet or a result (real engine)', function () {
  this.timeout(90_000);
  before(requireEngine);

  describe('a specs path that is wrong, or a folder with nothing in it', function () {
    let sb: Sandbox;
    before(async function () {
      sb = await Sandbox.create('slip-root');
      await sb.write('fleet.yaml', [sb.attempt('long-1', 'sleep 300'), sb.attempt('long-2', 'sleep 300')].join('---\n'));
      const r = await sb.cli('reconcile', '--once');
      expect(r.code, r.stderr).to.equal(0);
      expect((await mainContainers(sb)).map((c) => c.state)).to.deep.equal(['running', 'running']);
    });
    after(async function () {
      await sb.destroy();
    });

    it('a path that does not exist, or is a file: exit 2 naming it, before anything is planned; the fleet keeps running', async function () {
      const missing = path.join(sb.dir, 'specz');
      const file = path.join(sb.dir, 'a-file.yaml');
      await fs.writeFile(file, sb.attempt('other', 'true'));
      const before = JSON.stringify([...(await sb.store().loadAll()).values()]);
      for (const specs of [missing, file]) {
        for (const args of [['reconcile', '--once'], ['reconcile', '--once', '--wait'], ['plan'], ['reconcile']]) {
          const r = await sb.cliWith({ '--specs': specs }, ...args);
          expect(r.code, `${args.join(' ')} --specs ${specs}: ${r.stderr}`).to.equal(2);
          expect(r.stderr)
            .to.include(path.basename(specs))
            .and.to.match(/nothing was planned or changed/);
        }
      }
      expect((await mainContainers(sb)).map((c) => `${c.attempt}:${c.state}`)).to.deep.equal(['long-1:running', 'long-2:running']);
      sb.store().invalidate();
      expect(JSON.stringify([...(await sb.store().loadAll()).values()])).to.equal(before);
    });

    it('an empty folder removes nothing unless --allow-empty; plan says so', async function () {
      // The instance's own folder emptied (another folder is another source: refused, see binding.test.ts).
      await fs.rename(path.join(sb.specsDir, 'fleet.yaml'), path.join(sb.dir, 'fleet.yaml'));
      const empty = sb.specsDir;
      const p = await sb.cliWith({ '--specs': empty }, 'plan', '--detailed-exitcode');
      expect(p.code, p.stderr).to.equal(0);
      expect(p.stdout).to.match(/yields no attempts while the instance has 2: nothing is removed \(--allow-empty removes them\)/);
      const r = await sb.cliWith({ '--specs': empty }, 'reconcile', '--once');
      expect(r.code, r.stderr).to.equal(0);
      expect(r.stderr).to.match(/yields no attempts .* nothing was removed/);
      expect((await mainContainers(sb)).map((c) => c.state)).to.deep.equal(['running', 'running']);
      const allowed = await sb.cliWith({ '--specs': empty }, 'plan', '--allow-empty');
      expect(allowed.stdout).to.match(/attempt long-1: collect/);
      const gone = await sb.cliWith({ '--specs': empty }, 'reconcile', '--once', '--allow-empty');
      expect(gone.code, gone.stderr).to.equal(0);
      expect(await mainContainers(sb)).to.deep.equal([]);
    });
  });

  it('an existing specs folder that declares nothing, for an instance that never had anything: reconcile and plan exit 2 saying so, unless --allow-empty', async function () {
    const sb = await Sandbox.create('slip-empty');
    try {
      await sb.write('README.md', 'no specs here\n');
      for (const args of [['reconcile', '--once'], ['reconcile', '--once', '--wait'], ['plan'], ['plan', '-o', 'json']]) {
        const r = await sb.cli(...args);
        expect(r.code, `${args.join(' ')}: ${r.stderr}`).to.equal(2);
        expect(r.stderr, args.join(' ')).to.match(
          /declares no attempts .* and instance "\S+" has none: nothing to reconcile\. A wrong --specs .* --allow-empty accepts an empty source/,
        );
      }
      for (const args of [
        ['reconcile', '--once', '--allow-empty'],
        ['reconcile', '--once', '--wait', '--allow-empty'],
        ['plan', '--allow-empty'],
      ]) {
        const r = await sb.cli(...args);
        expect(r.code, `${args.join(' ')}: ${r.stderr}`).to.equal(0);
        expect(r.stderr).not.to.match(/declares no attempts/);
      }
      // once the instance has attempts, an emptied folder is the held case above (exit 0, nothing removed)
      await sb.write('a.yaml', sb.attempt('a', 'true'));
      expect((await sb.cli('reconcile', '--once', '--wait')).code).to.equal(0);
      await sb.remove('a.yaml');
      const held = await sb.cli('reconcile', '--once');
      expect(held.code, held.stderr).to.equal(0);
      expect(held.stderr).to.match(/yields no attempts while instance \S+ has some/);
    } finally {
      await sb.destroy();
    }
  });

  it('never reuses a run folder: not after clean, not with a fresh state folder', async function () {
    const sb = await Sandbox.create('slip-runs');
    try {
      await sb.write('r.yaml', sb.attempt('r', 'echo $$ > /results/pid.txt; ls /results > /tmp/seen; mv /tmp/seen /results/seen.txt'));
      const runOnce = async () => {
        const r = await sb.cli('reconcile', '--once', '--wait');
        expect(r.code, r.stderr).to.equal(0);
      };
      await runOnce();
      expect((await sb.cli('clean')).code).to.equal(0);
      await runOnce();
      // A fresh state folder (another checkout, say) with the same results root, on an instance of its own.
      const fresh = { '--state': path.join(sb.dir, 'state-2'), '--instance': `${sb.instance}-2` };
      try {
        const r = await sb.cliWith(fresh, 'reconcile', '--once', '--wait');
        expect(r.code, r.stderr).to.equal(0);
      } finally {
        expect((await sb.cliWith(fresh, 'clean')).code).to.equal(0);
      }
      const runs = (await fs.readdir(path.join(sb.resultsRoot, 'r'))).sort();
      expect(runs).to.deep.equal(['run-1', 'run-2', 'run-3']);
      for (const run of runs) {
        // each run found its results folder empty: it saw only the file it had just made
        expect(await fs.readFile(path.join(sb.resultsRoot, 'r', run, 'results', 'seen.txt'), 'utf8')).to.equal('pid.txt\n');
        const manifest = JSON.parse(await fs.readFile(path.join(sb.resultsRoot, 'r', run, 'manifest.json'), 'utf8')) as { files: { path: string }[] };
        expect(manifest.files.map((f) => f.path).sort()).to.deep.equal(['pid.txt', 'seen.txt']);
      }
      expect((await sb.status('r'))?.run).to.equal(2);
    } finally {
      await sb.destroy();
    }
  });

  it("startedAt and finishedAt are the engine's times, and durations round as kubectl rounds", async function () {
    const sb = await Sandbox.create('slip-times');
    try {
      await sb.write('t.yaml', sb.attempt('t', 'sleep 2'));
      const r = await sb.cli('reconcile', '--once', '--wait');
      expect(r.code, r.stderr).to.equal(0);
      const st = await sb.status('t');
      const info = await docker.getContainer(st?.containerId ?? 'none').inspect();
      const ms = (t: string) => new Date(Date.parse(t)).toISOString();
      expect(st?.startedAt).to.equal(ms(info.State.StartedAt));
      expect(st?.finishedAt).to.equal(ms(info.State.FinishedAt));
      const harvested = JSON.parse(await fs.readFile(path.join(sb.resultsRoot, 't', 'run-1', 'status.json'), 'utf8')) as {
        startedAt: string;
        finishedAt: string;
      };
      expect([harvested.startedAt, harvested.finishedAt]).to.deep.equal([st?.startedAt, st?.finishedAt]);
      const get = await sb.cli('get', 't');
      expect(get.stdout).to.match(/\bt\s+Succeeded\s+Completed\s+0\s+1\s+\S+\s+2s\s+passed\s*$/m);
    } finally {
      await sb.destroy();
    }
  });

  it("an Invalid attempt's status and describe carry its errors: file:line:col, field, message", async function () {
    const sb = await Sandbox.create('slip-invalid');
    try {
      await sb.write('bad.yaml', sb.attempt('bad', 'true', '  retries: -1\n  network: {mode: private}\n'));
      const r = await sb.cli('reconcile', '--once');
      expect(r.code).to.equal(2);
      const st = await sb.status('bad');
      expect(st?.phase).to.equal('Invalid');
      expect(st?.specErrors?.map((e) => `${path.basename(e.file)}:${e.line}:${e.col} ${e.path}`)).to.deep.equal([
        'bad.yaml:8:12 spec.retries',
        'bad.yaml:9:19 spec.network.mode',
      ]);
      expect(st?.message).to.match(/bad\.yaml:8:12: spec\.retries: must be at least 0 \(got -1\) \(and 1 more\)/);
      const d = await sb.cli('describe', 'bad');
      expect(d.stdout)
        .to.match(/bad\.yaml:8:12: spec\.retries: must be at least 0/)
        .and.to.match(/bad\.yaml:9:19: spec\.network\.mode: /);
      const json = JSON.parse((await sb.cli('get', 'bad', '-o', 'json')).stdout) as { status: { specErrors: unknown[] } };
      expect(json.status.specErrors).to.have.length(2);
    } finally {
      await sb.destroy();
    }
  });

  it('names never collide: a sidecar and an attempt named like it, and instances whose names run into attempt names', async function () {
    const sb = await Sandbox.create('slip-names');
    const base = `${TEST_RUN}-nm`;
    const x = await Sandbox.create('slip-names-x', `${base}-x`);
    const xy = await Sandbox.create('slip-names-xy', `${base}-x-y`);
    try {
      await sb.write(
        'c.yaml',
        [
          sb.attempt(
            'c',
            'wget -Y off -q -O /results/page.txt http://tools:8081/',
            "  network: {mode: isolated}\n  sidecars:\n    - {name: tools, image: berth/busybox:local, command: [sh, -c, 'mkdir -p /tmp/w && echo hi > /tmp/w/index.html && exec httpd -f -p 8081 -h /tmp/w']}\n",
          ),
          sb.attempt('c-sc-tools', 'echo me > /results/me.txt'),
        ].join('---\n'),
      );
      const r = await sb.cli('reconcile', '--once', '--wait');
      expect(r.code, r.stderr + r.stdout).to.equal(0);
      expect((await sb.status('c'))?.phase).to.equal('Succeeded');
      expect((await sb.status('c-sc-tools'))?.phase).to.equal('Succeeded');
      // Instance `<base>-x-y` with attempt `z`, and instance `<base>-x` with attempt `y-z`.
      await xy.write('z.yaml', xy.attempt('z', 'sleep 1'));
      await x.write('yz.yaml', x.attempt('y-z', 'sleep 1'));
      const [a, b] = await Promise.all([xy.cli('reconcile', '--once', '--wait'), x.cli('reconcile', '--once', '--wait')]);
      expect([a.code, b.code], a.stderr + b.stderr).to.deep.equal([0, 0]);
      expect((await xy.status('z'))?.phase).to.equal('Succeeded');
      expect((await x.status('y-z'))?.phase).to.equal('Succeeded');
      const names = [...(await mainContainers(x)), ...(await mainContainers(xy))].map((c) => c.name);
      expect(new Set(names).size).to.equal(2);
    } finally {
      await Promise.all([sb.destroy(), x.destroy(), xy.destroy()]);
    }
  });
});
