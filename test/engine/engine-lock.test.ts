/**
 * The engine-side instance lock on the real engine: the volume and its labels, refusal naming the
 * holder, races of many acquirers (fresh and stale) with exactly one winner, stale takeover, a
 * holder on another host refused with how to break it, an abandoned takeover claim recovered,
 * and release that never removes someone else's lock.
 */
import { expect } from 'chai';
import os from 'node:os';
import { LABELS, LOCK_LABELS, lockClaimName, lockVolumeName } from '../../src/constants';
import {
  acquireEngineLock,
  breakEngineLock,
  EngineLockHeldError,
  EngineLockUnreadableError,
  readEngineLock,
  type EngineLock,
} from '../../src/status/engine-lock';
import { docker, newInstance, requireEngine, testEngine } from '../support/engine';
import { Sandbox } from '../support/sandbox';

/** A pid that cannot exist (above any pid_max), so the holder is provably gone. */
const DEAD_PID = 2 ** 31 - 2;
const opts = { stateDir: '/tmp/state-a', command: 'reconcile --once' };

async function settleAll<T>(ps: Promise<T>[]): Promise<{ won: T[]; errors: unknown[] }> {
  const results = await Promise.allSettled(ps);
  return {
    won: results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : [])),
    errors: results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : [])),
  };
}

/** A lock (or claim) volume made by hand, as a holder that is gone would have left it. */
async function handMade(name: string, kind: string, instance: string, over: Record<string, string> = {}): Promise<void> {
  await docker.createVolume({
    Name: name,
    Driver: 'local',
    Labels: {
      [kind]: instance,
      [LOCK_LABELS.token]: 'dead',
      [LOCK_LABELS.pid]: String(DEAD_PID),
      [LOCK_LABELS.hostname]: os.hostname(),
      [LOCK_LABELS.stateDir]: '/tmp/state-b',
      [LOCK_LABELS.command]: 'reconcile',
      [LOCK_LABELS.startedAt]: '2024-01-02T03:04:05.000Z',
      ...over,
    },
  });
}

async function lockNames(instance: string): Promise<string[]> {
  const vols = (await docker.listVolumes()).Volumes ?? [];
  return vols
    .map((v) => v.Name)
    .filter((n) => n.startsWith(`berth.lock`) && n.includes(instance))
    .sort();
}

describe('status/engine-lock (real engine)', () => {
  const engine = testEngine();
  let instance: string;
  before(requireEngine);
  beforeEach(() => (instance = newInstance('elock')));

  it('is a volume named after the instance whose labels name the holder, and none of berth resource labels', async () => {
    const lock = await acquireEngineLock(engine, instance, opts);
    const v = await docker.getVolume(lockVolumeName(instance)).inspect();
    expect(v.Labels).to.include({
      [LOCK_LABELS.lock]: instance,
      [LOCK_LABELS.token]: lock.info.token,
      [LOCK_LABELS.pid]: String(process.pid),
      [LOCK_LABELS.hostname]: os.hostname(),
      [LOCK_LABELS.stateDir]: '/tmp/state-a',
      [LOCK_LABELS.command]: 'reconcile --once',
    });
    expect(v.Labels).to.not.have.any.keys(LABELS.managed, LABELS.instance);
    expect(await lock.isHeld()).to.equal(true);
    expect(await lock.release()).to.equal(true);
    expect(await lock.release()).to.equal(false);
    expect(await lockNames(instance)).to.deep.equal([]);
  });

  it('refuses a second acquirer, naming the instance and the holder', async () => {
    const lock = await acquireEngineLock(engine, instance, opts);
    try {
      const err = await acquireEngineLock(engine, instance, { stateDir: '/tmp/other', command: 'clean' }).catch((e: unknown) => e);
      expect(err).to.be.instanceOf(EngineLockHeldError);
      const msg = (err as Error).message;
      expect(msg).to.contain(`instance "${instance}"`).and.contain(`pid ${process.pid} on host ${os.hostname()}`).and.contain('state folder /tmp/state-a');
      expect(msg).to.contain(lock.info.startedAt).and.contain('berth reconcile --once');
      expect((err as EngineLockHeldError).otherHost).to.equal(false);
      expect(await lock.isHeld()).to.equal(true);
    } finally {
      await lock.release();
    }
  });

  it('a race of many acquirers has exactly one winner', async () => {
    for (let round = 0; round < 5; round++) {
      const { won, errors } = await settleAll(Array.from({ length: 16 }, () => acquireEngineLock(engine, instance, opts)));
      expect(won).to.have.length(1);
      expect(errors).to.have.length(15);
      for (const e of errors) expect(e).to.be.instanceOf(EngineLockHeldError);
      const winner = won[0] as EngineLock;
      expect((await readEngineLock(engine, instance))?.token).to.equal(winner.info.token);
      expect(await winner.release()).to.equal(true);
    }
    expect(await lockNames(instance)).to.deep.equal([]);
  });

  it('takes over a lock whose holder is gone, and says so', async () => {
    await handMade(lockVolumeName(instance), LOCK_LABELS.lock, instance);
    const warnings: string[] = [];
    const lock = await acquireEngineLock(engine, instance, { ...opts, logger: { warn: (m) => warnings.push(m) } });
    expect(lock.stale?.token).to.equal('dead');
    expect(warnings.join('\n')).to.contain('took over a stale engine lock').and.contain(`pid ${DEAD_PID}`);
    expect((await readEngineLock(engine, instance))?.token).to.equal(lock.info.token);
    await lock.release();
    expect(await lockNames(instance)).to.deep.equal([]);
  });

  it('a race of many acquirers for a stale lock has exactly one winner and leaves no claim', async () => {
    for (let round = 0; round < 4; round++) {
      await handMade(lockVolumeName(instance), LOCK_LABELS.lock, instance, { [LOCK_LABELS.token]: `dead${round}` });
      const { won, errors } = await settleAll(Array.from({ length: 12 }, () => acquireEngineLock(engine, instance, opts)));
      try {
        expect(won).to.have.length(1);
        for (const e of errors) expect(e).to.be.instanceOf(EngineLockHeldError);
        const winner = won[0] as EngineLock;
        // The stale lock is gone either way, and only a takeover removes it. Its taker usually
        // holds the lock now; a fresh acquirer may create the lock between the taker's removal and
        // its create (engine-lock.ts: "one holder either way"), and then it holds it, stale-free.
        expect([`dead${round}`, undefined]).to.include(winner.stale?.token);
        expect((await readEngineLock(engine, instance))?.token).to.equal(winner.info.token);
        expect(await lockNames(instance)).to.deep.equal([lockVolumeName(instance)]);
      } finally {
        for (const w of won) await w.release();
      }
    }
  });

  it('recovers a takeover abandoned by a taker that died holding its claim', async () => {
    await handMade(lockVolumeName(instance), LOCK_LABELS.lock, instance);
    await handMade(lockClaimName(instance, 'dead'), LOCK_LABELS.claim, instance, { [LOCK_LABELS.token]: 'dead2' });
    const lock = await acquireEngineLock(engine, instance, opts);
    expect(lock.stale?.token).to.equal('dead');
    expect(await lockNames(instance)).to.deep.equal([lockVolumeName(instance)]);
    await lock.release();
  });

  it('sweeps the claim of a taker that died after its takeover, while the holder works, before its release ends', async () => {
    // No lock, only a claim whose taker is gone: the generation it guarded no longer exists.
    await handMade(lockClaimName(instance, 'gone'), LOCK_LABELS.claim, instance, { [LOCK_LABELS.token]: 'dead3' });
    const lock = await acquireEngineLock(engine, instance, opts);
    expect(lock.stale).to.equal(undefined);
    expect(await lock.release()).to.equal(true);
    expect(await lockNames(instance)).to.deep.equal([]);
  });

  it('a claim of a live taker is not swept', async () => {
    await handMade(lockClaimName(instance, 'live'), LOCK_LABELS.claim, instance, {
      [LOCK_LABELS.token]: 'live1',
      [LOCK_LABELS.pid]: String(process.pid),
      [LOCK_LABELS.hostname]: 'elsewhere',
    });
    const lock = await acquireEngineLock(engine, instance, opts);
    await lock.release();
    expect(await lockNames(instance)).to.deep.equal([lockClaimName(instance, 'live')]);
    await docker.getVolume(lockClaimName(instance, 'live')).remove();
  });

  it('refuses a holder on another host, saying how to break the lock; unlock --force breaks it', async () => {
    await handMade(lockVolumeName(instance), LOCK_LABELS.lock, instance, { [LOCK_LABELS.hostname]: 'elsewhere', [LOCK_LABELS.pid]: '1' });
    const err = await acquireEngineLock(engine, instance, opts).catch((e: unknown) => e);
    expect(err).to.be.instanceOf(EngineLockHeldError);
    expect((err as EngineLockHeldError).otherHost).to.equal(true);
    expect((err as Error).message)
      .to.contain('host elsewhere')
      .and.contain('cannot tell whether it still runs')
      .and.contain(`berth --instance ${instance} unlock --force`);
    expect(await lockNames(instance)).to.deep.equal([lockVolumeName(instance)]);
    expect((await breakEngineLock(engine, instance)) as unknown).to.include({ hostname: 'elsewhere' });
    expect(await lockNames(instance)).to.deep.equal([]);
    const lock = await acquireEngineLock(engine, instance, opts);
    await lock.release();
  });

  it('refuses a holder of this host name in another pid namespace (berth in another container), whose pid means nothing here', async () => {
    await handMade(lockVolumeName(instance), LOCK_LABELS.lock, instance, { [LOCK_LABELS.pidNamespace]: 'pid:[1]' });
    const err = await acquireEngineLock(engine, instance, opts).catch((e: unknown) => e);
    expect(err).to.be.instanceOf(EngineLockHeldError);
    expect((err as EngineLockHeldError).otherHost).to.equal(true);
    expect((err as Error).message).to.contain('another pid namespace');
    await breakEngineLock(engine, instance);
  });

  it('refuses a volume with the lock name but without lock labels, leaving it in place', async () => {
    await handMade(lockVolumeName(instance), LOCK_LABELS.lock, instance, { [LOCK_LABELS.token]: 'not hex!' });
    const err = await acquireEngineLock(engine, instance, opts).catch((e: unknown) => e);
    expect(err).to.be.instanceOf(EngineLockUnreadableError);
    expect((err as Error).message)
      .to.contain(lockVolumeName(instance))
      .and.contain('unlock --force');
    expect(await lockNames(instance)).to.deep.equal([lockVolumeName(instance)]);
    expect(await breakEngineLock(engine, instance)).to.equal('unreadable');
  });

  it('release never removes a lock that is no longer ours', async () => {
    const lock = await acquireEngineLock(engine, instance, opts);
    await breakEngineLock(engine, instance);
    const other = await acquireEngineLock(engine, instance, opts);
    expect(await lock.isHeld()).to.equal(false);
    expect(await lock.release()).to.equal(false);
    expect(await other.isHeld()).to.equal(true);
    await other.release();
  });

  it('release never throws: an engine that cannot be reached keeps the lock, and says so', async () => {
    let down = false;
    const vols = engine.volumes;
    const flaky = {
      ...engine,
      volumes: {
        list: (f: string[]) => vols.list(f),
        create: (v: Parameters<typeof vols.create>[0]) => vols.create(v),
        remove: (n: string) => vols.remove(n),
        inspect: (n: string) => (down ? Promise.reject(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })) : vols.inspect(n)),
      },
    };
    const warnings: string[] = [];
    const lock = await acquireEngineLock(flaky, instance, { ...opts, logger: { warn: (m) => warnings.push(m) } });
    down = true;
    expect(await lock.release()).to.equal(false);
    expect(warnings.join('\n'))
      .to.contain(`could not release the engine lock ${lockVolumeName(instance)}`)
      .and.contain('ECONNREFUSED');
    expect(await lockNames(instance)).to.deep.equal([lockVolumeName(instance)]);
    await breakEngineLock(engine, instance);
  });

  it('berth unlock: removes a lock whose holder is gone; one it cannot judge only with --force', async () => {
    const sb = await Sandbox.create('unlock');
    try {
      const none = await sb.cli('unlock');
      expect([none.code, none.stdout]).to.deep.equal([0, `instance ${sb.instance}: no engine lock\n`]);
      await handMade(lockVolumeName(sb.instance), LOCK_LABELS.lock, sb.instance);
      const stale = await sb.cli('unlock');
      expect(stale.code, stale.stderr).to.equal(0);
      expect(stale.stdout).to.contain(`removed the engine lock of berth reconcile, pid ${DEAD_PID} on host ${os.hostname()}`);
      expect(await lockNames(sb.instance)).to.deep.equal([]);
      await handMade(lockVolumeName(sb.instance), LOCK_LABELS.lock, sb.instance, { [LOCK_LABELS.hostname]: 'elsewhere', [LOCK_LABELS.pid]: '1' });
      const refused = await sb.cli('unlock');
      expect(refused.code).to.equal(1);
      expect(refused.stderr).to.contain(`instance "${sb.instance}" is held by berth reconcile, pid 1 on host elsewhere`).and.contain('Add --force');
      expect(await lockNames(sb.instance)).to.deep.equal([lockVolumeName(sb.instance)]);
      const forced = await sb.cli('unlock', '--force');
      expect(forced.code, forced.stderr).to.equal(0);
      expect(await lockNames(sb.instance)).to.deep.equal([]);
    } finally {
      await sb.destroy();
    }
  });
});
