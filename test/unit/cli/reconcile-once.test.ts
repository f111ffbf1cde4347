/**
 * `reconcile --once` over the fake engine: the pass plans from the specs folder (read once its
 * lists are out); an engine that cannot be reached, or an instance held by another writer, ends
 * the command as before (nothing planned, exit 1).
 */
import { expect } from 'chai';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runReconcile } from '../../../src/cli/commands/reconcile';
import { makeContext } from '../../../src/cli/context';
import { bufferIo } from '../../../src/cli/io';
import { EngineUnreachableError } from '../../../src/engine/errors';
import type { Engine } from '../../../src/engine/types';
import { acquireEngineLock } from '../../../src/status/engine-lock';
import { FakeEngine } from '../../support/fake-engine';

/** The fake as the CLI's context takes an engine: a plain object (its methods bound). */
function plain(f: FakeEngine): Engine {
  return {
    containers: f.containers,
    networks: f.networks,
    volumes: f.volumes,
    images: f.images,
    events: f.events,
    ping: () => f.ping(),
    version: () => f.version(),
    reach: (id) => f.reach(id),
    isolation: () => f.isolation(),
    boot: () => f.boot(),
    abandon: (reason) => f.abandon(reason),
    local: null,
    remote: null,
    builds: f.builds,
  };
}

const SPEC = (name: string) => `apiVersion: berth.dev/v1\nkind: Attempt\nmetadata:\n  name: ${name}\nspec:\n  image: busybox\n  command: ["true"]\n`;

describe('cli/reconcile --once', () => {
  let dir: string;
  let engine: FakeEngine;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'berth-once-'));
    mkdirSync(path.join(dir, 'specs'));
    writeFileSync(path.join(dir, 'specs', 'a.yaml'), SPEC('a'));
    engine = new FakeEngine();
    engine.addImage({ ref: 'busybox' });
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const context = () => {
    const io = bufferIo();
    const ctx = makeContext({ specs: path.join(dir, 'specs'), state: path.join(dir, 'state'), instance: 'once', logLevel: 'error' }, io, {
      engine: plain(engine),
    });
    return { io, ctx };
  };
  const mains = async () => (await engine.containers.list(['dev.berth.instance=once'])).map((c) => c.name).sort();

  it('starts the attempts of the folder, then a second run changes nothing', async () => {
    const first = context();
    expect(await runReconcile(first.ctx, { once: true, maxRunning: 4, concurrency: 2 })).to.equal(0, first.io.stderr);
    const made = await mains();
    expect(made).to.have.length(1);
    writeFileSync(path.join(dir, 'specs', 'b.yaml'), SPEC('b'));
    const second = context();
    expect(await runReconcile(second.ctx, { once: true, maxRunning: 4, concurrency: 2 })).to.equal(0, second.io.stderr);
    expect(await mains()).to.have.length(2);
    // Once both have run and exited: a pass that changes nothing (only the lock volume is made and removed).
    for (const n of await mains()) engine.exit(n, 0);
    const settle = context();
    expect(await runReconcile(settle.ctx, { once: true, maxRunning: 4, concurrency: 2 })).to.equal(0, settle.io.stderr);
    const before = engine.calls.length;
    const third = context();
    expect(await runReconcile(third.ctx, { once: true, maxRunning: 4, concurrency: 2 })).to.equal(0, third.io.stderr);
    const ops = engine.calls.slice(before).map((c) => c.op);
    expect(ops.filter((op) => !op.startsWith('volumes.') && !/\.(list|inspect)$/.test(op) && !['ping', 'boot', 'version'].includes(op))).to.deep.equal([]);
    expect(ops.filter((op) => op.endsWith('.list')).length).to.be.greaterThan(0);
    expect(await mains()).to.have.length(2);
  });

  it('an engine that cannot be reached: told, exit 1, nothing made, no unhandled rejection', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (r: unknown) => unhandled.push(r);
    process.on('unhandledRejection', onUnhandled);
    try {
      engine.fail('ping', {
        error: new EngineUnreachableError('unavailable', 'unix:///nowhere.sock', 'ping', { cause: new Error('connect ENOENT /nowhere.sock') }),
      });
      const { io, ctx } = context();
      expect(await runReconcile(ctx, { once: true, maxRunning: 4, concurrency: 2 })).to.equal(1);
      expect(io.stderr).to.match(/^berth: .*cannot be reached/);
      expect(await mains()).to.deep.equal([]);
      await new Promise((r) => setImmediate(r));
      expect(unhandled).to.deep.equal([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('an instance another writer holds: refused, exit 1, nothing made', async () => {
    const held = await acquireEngineLock(engine, 'once', { stateDir: path.join(dir, 'other-state'), command: 'reconcile' });
    try {
      const { io, ctx } = context();
      expect(await runReconcile(ctx, { once: true, maxRunning: 4, concurrency: 2 })).to.equal(1);
      expect(io.stderr).to.match(/is held on this engine by another berth process/);
      expect(await mains()).to.deep.equal([]);
    } finally {
      await held.release();
    }
  });
});
