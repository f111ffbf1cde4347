/**
 * A pass that changes nothing loads no executor (nor what it pulls in: tar-stream, the harvest,
 * the attestation checks) and no winston: a CI job's no-op `reconcile --once` pays for neither.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const SRC = path.resolve(__dirname, '../../../src');
const SUPPORT = path.resolve(__dirname, '../../support');

function passIn(dir: string): { loaded: string[]; actions: number; results: number } {
  const code = `
    const { reconcilePass } = require(${JSON.stringify(path.join(SRC, 'controller/pass.ts'))});
    const { StatusStore } = require(${JSON.stringify(path.join(SRC, 'status/store.ts'))});
    const { createLogger } = require(${JSON.stringify(path.join(SRC, 'util/log.ts'))});
    const { FakeEngine } = require(${JSON.stringify(path.join(SUPPORT, 'fake-engine.ts'))});
    const dir = ${JSON.stringify(dir)};
    const cfg = { specsDir: dir + '/specs', stateDir: dir + '/state', resultsRoot: dir + '/results', instance: 'lazy', maxRunning: 4, concurrency: 2,
      attestIntervalMs: 60000, policy: {}, env: {}, log: createLogger({ level: 'info' }) };
    reconcilePass(cfg, new FakeEngine(), new StatusStore(cfg.stateDir, 'lazy')).then((res) => {
      const loaded = Object.keys(require.cache).filter((k) => /[\\\\/]src[\\\\/]execute[\\\\/]executor\\.ts$|[\\\\/]node_modules[\\\\/](winston|tar-stream)[\\\\/]/.test(k));
      process.stdout.write(JSON.stringify({ loaded, actions: res.plan.actions.filter((a) => a.ops.length > 0).length, results: res.results.length }));
    });`;
  const r = spawnSync(process.execPath, ['--require', 'tsx/cjs', '-e', code], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(r.stderr);
  return JSON.parse(r.stdout) as { loaded: string[]; actions: number; results: number };
}

describe('controller/pass: what a pass loads', function () {
  this.timeout(30_000);
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'berth-pass-lazy-'));
    mkdirSync(path.join(dir, 'specs'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('a pass with nothing to do loads neither the executor nor winston', () => {
    expect(passIn(dir)).to.deep.equal({ loaded: [], actions: 0, results: 0 });
  });

  it('a pass with something to do loads the executor and carries its actions out', () => {
    writeFileSync(
      path.join(dir, 'specs', 'a.yaml'),
      'apiVersion: berth.dev/v1\nkind: Attempt\nmetadata:\n  name: a\nspec:\n  image: busybox\n  command: ["true"]\n',
    );
    const r = passIn(dir);
    expect(r.actions).to.equal(1);
    expect(r.results).to.equal(1);
    expect(r.loaded.some((k) => /executor\.ts$/.test(k))).to.equal(true);
  });
});
