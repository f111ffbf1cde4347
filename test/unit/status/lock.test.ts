/**
 * The controller lock on a real temp folder: refusal naming the holder, stale takeover (dead pid,
 * reused pid, other boot, crashed holder process), races of many acquirers with exactly one
 * winner, and release that is idempotent and never removes someone else's lock.
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LockHeldError, LockUnreadableError, acquireLock, type Lock, type LockInfo } from '../../../src/status/lock';
import { FakeClock } from '../../../src/util/clock';

/** A pid that cannot exist (above any pid_max), so the holder is provably gone. */
const DEAD_PID = 2 ** 31 - 2;

function lockInfo(over: Partial<LockInfo> = {}): LockInfo {
  return {
    pid: DEAD_PID,
    hostname: os.hostname(),
    startedAt: '2024-01-02T03:04:05.000Z',
    instance: 'default',
    token: 'deadbeef',
    ...over,
  };
}

async function settleAll<T>(ps: Promise<T>[]): Promise<{ won: T[]; errors: unknown[] }> {
  const results = await Promise.allSettled(ps);
  return {
    won: results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : [])),
    errors: results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : [])),
  };
}

describe('status/lock', () => {
  let dir: string;
  let lockFile: string;
  beforeEach(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-lock-'));
    lockFile = path.join(dir, 'default.lock');
  });
  afterEach(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  const readLockFile = async (): Promise<LockInfo> => JSON.parse(await fs.readFile(lockFile, 'utf8')) as LockInfo;

  it('creates <stateDir>/<instance>.lock naming this process, and leaves nothing else', async () => {
    const clock = new FakeClock(Date.UTC(2025, 0, 2, 3, 4, 5));
    const lock = await acquireLock(path.join(dir, 'nested'), 'default', { clock });
    expect(lock.path).to.equal(path.join(dir, 'nested', 'default.lock'));
    const onDisk = JSON.parse(await fs.readFile(lock.path, 'utf8')) as LockInfo;
    expect(onDisk).to.deep.equal(lock.info);
    expect(onDisk).to.include({ pid: process.pid, hostname: os.hostname(), instance: 'default', startedAt: '2025-01-02T03:04:05.000Z' });
    if (process.platform === 'linux') expect(onDisk.processStart).to.match(/^\d+$/);
    expect(lock.stale).to.equal(undefined);
    expect(await lock.isHeld()).to.equal(true);
    expect(await fs.readdir(path.join(dir, 'nested'))).to.deep.equal(['default.lock']);
    await lock.release();
  });

  it('refuses a second acquire with a LockHeldError naming the holder', async () => {
    const lock = await acquireLock(dir, 'default');
    const err = await acquireLock(dir, 'default').then(
      () => expect.fail('second acquire should be refused'),
      (e: unknown) => e,
    );
    expect(err).to.be.instanceOf(LockHeldError);
    const held = err as LockHeldError;
    expect(held.code).to.equal('LockHeld');
    expect(held.holder.token).to.equal(lock.info.token);
    expect(held.message).to.contain(`pid ${process.pid} on host ${os.hostname()} since ${lock.info.startedAt}`);
    expect(held.message).to.contain(lockFile);
    // what to do (issue 54): wait, or stop it, knowing its attempts keep running
    expect(held.message).to.contain(`. Wait for it to end, or stop it (kill ${process.pid}: it leaves its attempts running, the next reconcile adopts them)`);
    expect(await fs.readdir(dir)).to.deep.equal(['default.lock']);
    await lock.release();
  });

  it('locks instances independently', async () => {
    const a = await acquireLock(dir, 'a');
    const b = await acquireLock(dir, 'b');
    expect(await fs.readdir(dir)).to.have.members(['a.lock', 'b.lock']);
    await Promise.all([a.release(), b.release()]);
  });

  it('refuses instance names that are not plain file names', async () => {
    for (const bad of ['', '.', '..', 'a/b', 'a\\b']) {
      await acquireLock(dir, bad).then(
        () => expect.fail(`instance ${JSON.stringify(bad)} should be refused`),
        (e: unknown) => expect(e).to.be.instanceOf(RangeError),
      );
    }
  });

  it('takes over a stale lock whose pid does not exist, and says so', async () => {
    await fs.writeFile(lockFile, JSON.stringify(lockInfo()));
    const warnings: string[] = [];
    const lock = await acquireLock(dir, 'default', { logger: { warn: (m) => warnings.push(m) } });
    expect(lock.stale).to.deep.include({ pid: DEAD_PID, token: 'deadbeef' });
    expect((await readLockFile()).token).to.equal(lock.info.token);
    expect(warnings).to.have.length(1);
    expect(warnings[0]).to.contain('stale').and.to.contain(`pid ${DEAD_PID}`);
    expect(await fs.readdir(dir)).to.deep.equal(['default.lock']);
    await lock.release();
  });

  it('treats a live pid with another start time as reused, hence stale', async function () {
    if (process.platform !== 'linux') this.skip();
    await fs.writeFile(lockFile, JSON.stringify(lockInfo({ pid: process.pid, processStart: '1' })));
    const lock = await acquireLock(dir, 'default');
    expect(lock.stale?.pid).to.equal(process.pid);
    await lock.release();
  });

  it('treats a lock from another boot as stale', async function () {
    if (process.platform !== 'linux') this.skip();
    await fs.writeFile(lockFile, JSON.stringify(lockInfo({ pid: process.pid, bootId: 'another-boot' })));
    const lock = await acquireLock(dir, 'default');
    expect(lock.stale?.bootId).to.equal('another-boot');
    await lock.release();
  });

  it('refuses a lock held on another host, saying it cannot check it', async () => {
    await fs.writeFile(lockFile, JSON.stringify(lockInfo({ hostname: 'elsewhere' })));
    const err = (await acquireLock(dir, 'default').catch((e: unknown) => e)) as LockHeldError;
    expect(err).to.be.instanceOf(LockHeldError);
    expect(err.otherHost).to.equal(true);
    expect(err.message).to.contain(`pid ${DEAD_PID} on host elsewhere`).and.to.contain('another host');
  });

  it('refuses an unreadable lock file with a clear error, leaving it in place', async () => {
    await fs.writeFile(lockFile, '{"pid": ');
    const err = await acquireLock(dir, 'default').catch((e: unknown) => e);
    expect(err).to.be.instanceOf(LockUnreadableError);
    expect((err as Error).message)
      .to.contain(lockFile)
      .and.to.contain('remove it');
    await fs.writeFile(lockFile, JSON.stringify({ pid: 0, hostname: 'h' }));
    expect(await acquireLock(dir, 'default').catch((e: unknown) => e)).to.be.instanceOf(LockUnreadableError);
    expect(await fs.readFile(lockFile, 'utf8')).to.contain('"pid":0');
  });

  it('a race of many acquirers in one process has exactly one winner', async () => {
    for (let round = 0; round < 5; round++) {
      const { won, errors } = await settleAll(Array.from({ length: 16 }, () => acquireLock(dir, 'default')));
      expect(won).to.have.length(1);
      expect(errors).to.have.length(15);
      for (const e of errors) expect(e).to.be.instanceOf(LockHeldError);
      const winner = won[0] as Lock;
      expect((await readLockFile()).token).to.equal(winner.info.token);
      expect(await winner.release()).to.equal(true);
      expect(await fs.readdir(dir)).to.deep.equal([]);
    }
  });

  it('a race of many acquirers for a stale lock has exactly one winner', async () => {
    for (let round = 0; round < 5; round++) {
      await fs.writeFile(lockFile, JSON.stringify(lockInfo({ token: `dead${round}` })));
      const { won, errors } = await settleAll(Array.from({ length: 16 }, () => acquireLock(dir, 'default')));
      expect(won).to.have.length(1);
      for (const e of errors) expect(e).to.be.instanceOf(LockHeldError);
      const winner = won[0] as Lock;
      expect(winner.stale?.token).to.equal(`dead${round}`);
      expect((await readLockFile()).token).to.equal(winner.info.token);
      await winner.release();
      expect(await fs.readdir(dir)).to.deep.equal([]);
    }
  });

  it('a taker that was slow to claim a stale lock does not replace the new holder', async () => {
    // A judges the lock stale, then stalls right before claiming the takeover; B claims, takes the
    // lock and drops its claim. When A goes on, its claim succeeds, but the lock is no longer the
    // stale one it judged, so A must see B as the holder rather than replace B's lock.
    await fs.writeFile(lockFile, JSON.stringify(lockInfo({ token: 'dead' })));
    const realLink = fs.link;
    let releaseA: () => void = () => undefined;
    const aStalled = new Promise<void>((resolve) => (releaseA = resolve));
    let aReachedClaim: () => void = () => undefined;
    const aAtClaim = new Promise<void>((resolve) => (aReachedClaim = resolve));
    let claims = 0;
    fs.link = async (from, to) => {
      if (String(to).endsWith('.takeover-dead') && claims++ === 0) {
        aReachedClaim();
        await aStalled;
      }
      return realLink(from, to);
    };
    try {
      const a = acquireLock(dir, 'default').catch((e: unknown) => e);
      await aAtClaim;
      const b = await acquireLock(dir, 'default');
      expect(b.stale?.token).to.equal('dead');
      releaseA();
      const outcome = await a;
      expect(outcome).to.be.instanceOf(LockHeldError);
      expect((outcome as LockHeldError).holder.token).to.equal(b.info.token);
      expect((await readLockFile()).token).to.equal(b.info.token);
      await b.release();
    } finally {
      fs.link = realLink;
    }
  });

  it('recovers a takeover abandoned by a crashed taker', async () => {
    // The first holder died; so did a process that had claimed the takeover but not finished it.
    await fs.writeFile(lockFile, JSON.stringify(lockInfo({ token: 'aaaa' })));
    await fs.writeFile(`${lockFile}.takeover-aaaa`, JSON.stringify(lockInfo({ token: 'bbbb' })));
    const lock = await acquireLock(dir, 'default');
    expect(lock.stale?.token).to.equal('aaaa');
    expect(await fs.readdir(dir)).to.deep.equal(['default.lock']);
    await lock.release();
  });

  it('release is idempotent, also when called concurrently', async () => {
    const lock = await acquireLock(dir, 'default');
    expect(await lock.release()).to.equal(true);
    expect(await lock.release()).to.equal(false);
    expect(await lock.isHeld()).to.equal(false);
    expect(await fs.readdir(dir)).to.deep.equal([]);
    const again = await acquireLock(dir, 'default');
    expect(await Promise.all([again.release(), again.release()])).to.have.members([true, false]);
    expect(await fs.readdir(dir)).to.deep.equal([]);
  });

  it('release never removes a lock that is no longer ours', async () => {
    const warnings: string[] = [];
    const mine = await acquireLock(dir, 'default', { logger: { warn: (m) => warnings.push(m) } });
    await fs.writeFile(lockFile, JSON.stringify(lockInfo({ pid: process.pid, token: 'cafe' }))); // taken over meanwhile
    expect(await mine.isHeld()).to.equal(false);
    expect(await mine.release()).to.equal(false);
    expect((await readLockFile()).token).to.equal('cafe');
    expect(warnings).to.have.length(1);
    expect(warnings[0]).to.contain('no longer ours');
  });

  it('a lock held by another process is refused, and taken over after that process is killed', async function () {
    this.timeout(20_000);
    const fixture = path.join(__dirname, 'hold-lock.fixture.ts');
    const child = spawn(process.execPath, ['--require', 'tsx/cjs', fixture, dir, 'default'], { stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      const line = await new Promise<string>((resolve, reject) => {
        let out = '';
        let errOut = '';
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          if (out.includes('\n')) resolve(out.trim());
        });
        child.stderr.on('data', (d: Buffer) => (errOut += d.toString()));
        child.on('exit', (code) => reject(new Error(`helper exited ${code}: ${errOut}`)));
      });
      expect(line).to.equal(`locked ${child.pid}`);
      const err = (await acquireLock(dir, 'default').catch((e: unknown) => e)) as LockHeldError;
      expect(err).to.be.instanceOf(LockHeldError);
      expect(err.message).to.contain(`pid ${child.pid} on host ${os.hostname()}`);

      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
      const lock = await acquireLock(dir, 'default');
      expect(lock.stale?.pid).to.equal(child.pid);
      await lock.release();
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });

  describe('an unreadable lock file, for a caller that holds the engine lock (unreadableIsStale)', () => {
    const damagedDir = () => path.join(dir, 'default', 'damaged');
    const GARBAGE = '\u0000garbage {{{ SECRET-MARKER-1d2e';

    it('is set aside into <state>/<instance>/damaged/ byte for byte, said once without its bytes, and the lock taken', async () => {
      await fs.writeFile(lockFile, GARBAGE);
      const warnings: string[] = [];
      const clock = new FakeClock(Date.UTC(2025, 0, 2, 3, 4, 5, 6));
      const lock = await acquireLock(dir, 'default', { clock, unreadableIsStale: true, logger: { warn: (m) => warnings.push(m) } });
      expect((await readLockFile()).token).to.equal(lock.info.token);
      expect(lock.stale).to.equal(undefined);
      const kept = path.join(damagedDir(), 'default.lock.2025-01-02T03-04-05.006Z');
      expect(await fs.readdir(damagedDir())).to.deep.equal([path.basename(kept)]);
      expect(await fs.readFile(kept, 'utf8')).to.equal(GARBAGE);
      expect(warnings).to.deep.equal([
        `${lockFile}: unreadable lock file (not JSON: binary content, not text) set aside as ${kept}: the instance's engine lock, held by this berth, shows no other writer`,
      ]);
      expect((await fs.readdir(dir)).sort()).to.deep.equal(['default', 'default.lock']);
      await lock.release();
    });

    for (const [what, make] of [
      ['a folder', () => fs.mkdir(lockFile)],
      ['a link to nothing', () => fs.symlink(path.join(os.tmpdir(), 'berth-no-such-lock'), lockFile)],
      ['a lock without a holder', () => fs.writeFile(lockFile, JSON.stringify({ pid: 0, hostname: 'h' }))],
      ['a file too big to be a lock', () => fs.writeFile(lockFile, Buffer.alloc(65 * 1024, 'x'))],
    ] as const) {
      it(`${what} in its place is set aside too; without the engine lock it is refused and left`, async () => {
        await make();
        const refused = await acquireLock(dir, 'default').catch((e: unknown) => e);
        expect(refused).to.be.instanceOf(LockUnreadableError);
        expect((refused as Error).message)
          .to.contain(lockFile)
          .and.to.contain('remove it if no berth controller runs');
        await fs.lstat(lockFile);
        const lock = await acquireLock(dir, 'default', { unreadableIsStale: true });
        expect((await readLockFile()).token).to.equal(lock.info.token);
        expect(await fs.readdir(damagedDir())).to.have.length(1);
        await lock.release();
      });
    }

    it('a live holder is still refused, whatever the caller holds', async () => {
      const holder = await acquireLock(dir, 'default');
      const err = await acquireLock(dir, 'default', { unreadableIsStale: true }).catch((e: unknown) => e);
      expect(err).to.be.instanceOf(LockHeldError);
      await holder.release();
    });

    it('a race of many acquirers: exactly one winner, the file set aside once, no claim left', async () => {
      for (let round = 0; round < 5; round++) {
        await fs.writeFile(lockFile, `${GARBAGE} ${round}`);
        const warnings: string[] = [];
        const { won, errors } = await settleAll(
          Array.from({ length: 16 }, () => acquireLock(dir, 'default', { unreadableIsStale: true, logger: { warn: (m) => warnings.push(m) } })),
        );
        expect(won).to.have.length(1);
        for (const e of errors) expect(e).to.be.instanceOf(LockHeldError);
        expect(warnings.filter((w) => w.includes('set aside'))).to.have.length(1);
        expect((await readLockFile()).token).to.equal((won[0] as Lock).info.token);
        expect((await fs.readdir(dir)).sort()).to.deep.equal(['default', 'default.lock']);
        await (won[0] as Lock).release();
      }
      expect(await fs.readdir(damagedDir())).to.have.length(5);
    });

    it('a taker that died holding the claim of the damaged file is followed, and its claim removed', async () => {
      await fs.writeFile(lockFile, GARBAGE);
      const st = await fs.lstat(lockFile, { bigint: true });
      await fs.writeFile(`${lockFile}.takeover-damaged-${st.ino}-${st.ctimeNs}`, JSON.stringify(lockInfo({ token: 'bbbb' })));
      const lock = await acquireLock(dir, 'default', { unreadableIsStale: true });
      expect((await fs.readdir(dir)).sort()).to.deep.equal(['default', 'default.lock']);
      expect(await fs.readdir(damagedDir())).to.have.length(1);
      await lock.release();
    });

    it('a state folder that is a file is a clear error naming it', async () => {
      const file = path.join(dir, 'state');
      await fs.writeFile(file, 'x');
      const err = await acquireLock(file, 'default', { unreadableIsStale: true }).catch((e: unknown) => e);
      expect((err as Error).message).to.equal(
        `${file}: the state folder is a file, not a folder; move it out of the way (berth makes a new one), or name another with --state`,
      );
    });
  });
});
