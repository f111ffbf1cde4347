/**
 * The engine contract berth relies on, as one suite run against the real engine
 * (test/engine/engine-contract.test.ts) and against the fake (test/unit/engine/fake-engine.test.ts):
 * whatever the fake answers here, the real engine answers too.
 */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { extract, pack } from 'tar-stream';
import { classify } from '../../src/engine/errors';
import { BuildError, type ContainerCreateSpec, type Engine, type EngineEvent, type Labels, type PullProgress, type RegistryAuth } from '../../src/engine/types';
import { ImagePullError } from '../../src/engine/errors';

export interface ContractHarness {
  engine: Engine;
  /** An image the engine holds (one that carries at least one label of its own). */
  image: string;
  /** Labels every resource of the suite carries (how the real engine's are found and removed). */
  labels: Labels;
  /** A fresh, unique name prefix for one test. */
  name(tag: string): string;
  /**
   * Resolves once the container (started with `sh -c 'exit <code>'`, or with WRITE_FILE's
   * `sh -c 'printf %s TEXT > FILE'`, which exits 0) has exited with `code`.
   */
  exited(id: string, code: number): Promise<void>;
  /** Resolves once the container (started with MEMORY_BOMB under a 16 MiB memory limit) has been OOM-killed. */
  oomKilled(id: string): Promise<void>;
  /** `docker tag source ref` (source: a ref or an id). */
  tag(source: string, ref: string): Promise<void>;
  /** `docker rmi ref` of a tag this suite made (the image itself stays: the suite's image names it too). */
  untag(ref: string): Promise<void>;
  /**
   * A registry the engine pulls from (the real engine: a TestRegistry; the fake: its own), with
   * an image in it that is not on the engine, its credential, and a tag it does not hold. Called
   * once, after before(); what it pulled is removed by after().
   */
  registry?(): Promise<{ ref: string; auth: RegistryAuth; missing: string }>;
  /**
   * A new image made from `ref`'s image (or from the suite's image when `ref` names none yet),
   * tagged `ref`: the tag moves to it, and the old one becomes its parent (a build FROM the tag
   * does the same; the real engine's harness commits a container of it). Returns the new id.
   */
  rebuild(ref: string): Promise<string>;
  /** `docker rmi ref` of an image `rebuild` made, with the untagged parents only it held. */
  removeBuilt(ref: string): Promise<void>;
  /** Called before the suite (engine checks) and after it (removes what is left). */
  before(): Promise<void>;
  after(): Promise<void>;
}

function containerSpec(h: ContractHarness, name: string, cmd: string[], labels: Labels = {}): ContainerCreateSpec {
  return {
    name,
    image: h.image,
    cmd,
    env: [],
    workingDir: '/',
    labels: { ...h.labels, ...labels },
    host: {
      networkMode: 'none',
      binds: [],
      mounts: [],
      capDrop: ['ALL'],
      capAdd: [],
      securityOpt: ['no-new-privileges'],
      privileged: false,
      init: false,
      pidsLimit: 64,
      readonlyRootfs: false,
    },
  };
}

/** A shell that writes `text` (no spaces) to `file` and exits 0 (the fake's harness runs it: FakeEngine.runTasks). */
export const WRITE_FILE = (text: string, file: string): string[] => ['sh', '-c', `printf %s ${text} > ${file}`];
/** WRITE_FILE's command read back, for the fake: what it writes where. */
export const WRITE_FILE_RE = /^printf %s (\S+) > (\S+)$/;

/** A shell that outgrows a 16 MiB memory limit (the kernel's OOM killer ends it). */
export const MEMORY_BOMB = ['sh', '-c', 'x=$(head -c 67108864 /dev/zero | tr "\\000" a); echo ${#x}'];

/** The engine's getArchive. */
function getArchive(h: ContractHarness, id: string, path: string): Promise<NodeJS.ReadableStream> {
  return h.engine.containers.getArchive(id, path);
}

async function rejection(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => {
      throw new Error('expected the call to fail, it succeeded');
    },
    (err: unknown) => err,
  );
}

/**
 * `registry`: whether the engine reaches a test registry (the machine's engine, the fake); an
 * engine of the compatibility matrix runs in a network namespace of its own that reaches none,
 * and its suite has no pull test (a known limit: the matrix checks what the stores change).
 */
export function engineContract(title: string, harness: () => ContractHarness, o: { registry: boolean } = { registry: true }): void {
  describe(`engine contract: ${title}`, function () {
    let h: ContractHarness;
    before(async function () {
      h = harness();
      await h.before();
    });
    after(async function () {
      await h.after();
    });

    it("isolation says the engine's seccomp, cgroup version, storage driver and default runtime", async function () {
      const i = await h.engine.isolation();
      expect(['default', 'custom', 'unconfined', 'absent']).to.include(i.seccomp);
      expect(i.storageDriver).to.match(/^[a-z0-9-]+$/);
      expect(i.defaultRuntime).to.match(/^[a-z0-9.-]+$/);
      expect(['1', '2', null]).to.include(i.cgroupVersion);
      for (const k of ['apparmor', 'selinux', 'userns', 'rootless'] as const) expect(i[k]).to.be.a('boolean');
    });

    it('a container name that is taken is 409 (conflict); the first container is untouched', async function () {
      const name = h.name('dup');
      const id = await h.engine.containers.create(containerSpec(h, name, ['true']));
      const err = await rejection(h.engine.containers.create(containerSpec(h, name, ['true'], { other: 'x' })));
      expect(classify(err)).to.equal('conflict');
      expect((await h.engine.containers.inspect(name)).id).to.equal(id);
      expect(await h.engine.containers.remove(id)).to.equal(true);
    });

    it('a network name that is taken is 409 (conflict)', async function () {
      const name = h.name('net');
      const id = await h.engine.networks.create({ name, labels: h.labels, internal: true });
      const err = await rejection(h.engine.networks.create({ name, labels: h.labels, internal: true }));
      expect(classify(err)).to.equal('conflict');
      expect((await h.engine.networks.inspect(name)).id).to.equal(id);
      expect(await h.engine.networks.remove(id)).to.equal(true);
    });

    it('a volume create of a taken name answers with the existing volume, its labels untouched', async function () {
      const name = h.name('vol');
      expect(await h.engine.volumes.create({ name, labels: { ...h.labels, first: '1' } })).to.equal(name);
      expect(await h.engine.volumes.create({ name, labels: { ...h.labels, second: '2' } })).to.equal(name);
      expect((await h.engine.volumes.inspect(name)).labels).to.deep.equal({ ...h.labels, first: '1' });
      expect(await h.engine.volumes.remove(name)).to.equal(true);
    });

    it('missing is 404 (not-found) to inspect, start and putArchive; remove of a missing one is false', async function () {
      const name = h.name('missing');
      for (const call of [
        () => h.engine.containers.inspect(name),
        () => h.engine.containers.start(name),
        () => h.engine.containers.putArchive(name, '/', Buffer.alloc(1024)),
        () => getArchive(h, name, '/workspace'),
        () => h.engine.networks.inspect(name),
        () => h.engine.networks.connect(name, name),
        () => h.engine.volumes.inspect(name),
      ]) {
        expect(classify(await rejection(call()))).to.equal('not-found');
      }
      expect(await h.engine.containers.remove(name)).to.equal(false);
      expect(await h.engine.networks.remove(name)).to.equal(false);
      expect(await h.engine.volumes.remove(name)).to.equal(false);
    });

    it("a container's log driver and options are as created; without one, the default json-file with no options", async function () {
      const capped = containerSpec(h, h.name('logs'), ['true']);
      capped.host.logConfig = { type: 'json-file', config: { 'max-size': '1m', 'max-file': '2' } };
      const id = await h.engine.containers.create(capped);
      expect((await h.engine.containers.inspect(id)).host.logConfig).to.deep.equal({ type: 'json-file', config: { 'max-size': '1m', 'max-file': '2' } });
      const plain = await h.engine.containers.create(containerSpec(h, h.name('logs-default'), ['true']));
      expect((await h.engine.containers.inspect(plain)).host.logConfig).to.deep.equal({ type: 'json-file', config: {} });
      expect(await h.engine.containers.remove(id)).to.equal(true);
      expect(await h.engine.containers.remove(plain)).to.equal(true);
    });

    it('a container runs the entrypoint its create gave, its command as the arguments; without one, the image has none here', async function () {
      const given = await h.engine.containers.create({ ...containerSpec(h, h.name('entry'), ['pause']), entrypoint: ['/bin/true'] });
      const plain = await h.engine.containers.create(containerSpec(h, h.name('entry-none'), ['true']));
      const [a, b] = [await h.engine.containers.inspect(given), await h.engine.containers.inspect(plain)];
      expect([a.config.entrypoint, a.config.cmd]).to.deep.equal([['/bin/true'], ['pause']]);
      expect([b.config.entrypoint, b.config.cmd]).to.deep.equal([null, ['true']]);
      await h.engine.containers.remove(given);
      await h.engine.containers.remove(plain);
    });

    it('labels are kept exactly as given; a container has its image labels too, the given ones winning', async function () {
      const image = await h.engine.images.inspect(h.image);
      expect(Object.keys(image.labels).length).to.be.greaterThan(0);
      const [imgKey] = Object.keys(image.labels) as [string];
      const given = { 'dev.berth.contract/a': 'x=y, z', 'dev.berth.contract/empty': '' };
      const id = await h.engine.containers.create(containerSpec(h, h.name('labels'), ['true'], given));
      expect((await h.engine.containers.inspect(id)).labels).to.deep.equal({ ...image.labels, ...h.labels, ...given });
      const over = await h.engine.containers.create(containerSpec(h, h.name('labels-over'), ['true'], { [imgKey]: 'mine' }));
      expect((await h.engine.containers.inspect(over)).labels[imgKey]).to.equal('mine');
      const net = h.name('labels-net');
      await h.engine.networks.create({ name: net, labels: { ...h.labels, ...given }, internal: true });
      expect((await h.engine.networks.inspect(net)).labels).to.deep.equal({ ...h.labels, ...given });
      await h.engine.containers.remove(id);
      await h.engine.containers.remove(over);
      await h.engine.networks.remove(net);
    });

    it('lists filter by label: a key alone, key=value, all of them', async function () {
      const tag = h.name('filter');
      const a = await h.engine.containers.create(containerSpec(h, `${tag}-a`, ['true'], { 'dev.berth.contract/case': tag, 'dev.berth.contract/k': 'a' }));
      const b = await h.engine.containers.create(containerSpec(h, `${tag}-b`, ['true'], { 'dev.berth.contract/case': tag, 'dev.berth.contract/k': 'b' }));
      const names = async (f: string[]) => (await h.engine.containers.list(f)).map((c) => c.name).sort();
      expect(await names([`dev.berth.contract/case=${tag}`])).to.deep.equal([`${tag}-a`, `${tag}-b`]);
      expect(await names([`dev.berth.contract/case=${tag}`, 'dev.berth.contract/k=b'])).to.deep.equal([`${tag}-b`]);
      expect(await names([`dev.berth.contract/case=${tag}`, 'dev.berth.contract/k'])).to.deep.equal([`${tag}-a`, `${tag}-b`]);
      expect(await names([`dev.berth.contract/case=${tag}`, 'dev.berth.contract/nope'])).to.deep.equal([]);
      await h.engine.networks.create({ name: `${tag}-n`, labels: { ...h.labels, 'dev.berth.contract/case': tag }, internal: true });
      expect((await h.engine.networks.list([`dev.berth.contract/case=${tag}`])).map((n) => n.name)).to.deep.equal([`${tag}-n`]);
      await h.engine.volumes.create({ name: `${tag}-v`, labels: { ...h.labels, 'dev.berth.contract/case': tag } });
      expect((await h.engine.volumes.list([`dev.berth.contract/case=${tag}`])).map((v) => v.name)).to.deep.equal([`${tag}-v`]);
      await h.engine.containers.remove(a);
      await h.engine.containers.remove(b);
      await h.engine.networks.remove(`${tag}-n`);
      await h.engine.volumes.remove(`${tag}-v`);
    });

    it('start is idempotent, stop of a stopped one succeeds; the state after exit has the code and the times', async function () {
      const id = await h.engine.containers.create(containerSpec(h, h.name('exit'), ['sh', '-c', 'exit 3']));
      const created = await h.engine.containers.inspect(id);
      expect(created.runState.status).to.equal('created');
      expect(created.runState.startedAt.startsWith('0001-')).to.equal(true);
      await h.engine.containers.start(id);
      await h.exited(id, 3);
      const d = await h.engine.containers.inspect(id);
      expect([d.runState.status, d.runState.running, d.runState.exitCode]).to.deep.equal(['exited', false, 3]);
      // Both set (the engine may stamp a task that ends at once as finished before it started).
      expect([d.runState.startedAt, d.runState.finishedAt].map((t) => t.startsWith('0001-') || Number.isNaN(Date.parse(t)))).to.deep.equal([false, false]);
      await h.engine.containers.stop(id, 1); // already stopped: success

      const long = await h.engine.containers.create(containerSpec(h, h.name('long'), ['sleep', '60']));
      await h.engine.containers.start(long);
      await h.engine.containers.start(long); // already started: the adapter's success
      expect((await h.engine.containers.inspect(long)).runState.running).to.equal(true);
      expect(await h.engine.containers.remove(long)).to.equal(true); // remove forces
      expect(classify(await rejection(h.engine.containers.inspect(long)))).to.equal('not-found');
      await h.engine.containers.remove(id);
    });

    it("exec gives the command's exit code in a running container; a stopped one is 409, a missing one 404", async function () {
      const id = await h.engine.containers.create(containerSpec(h, h.name('exec'), ['sleep', '60']));
      await h.engine.containers.start(id);
      expect(await h.engine.containers.exec(id, ['true'], 10_000)).to.equal(0);
      expect(await h.engine.containers.exec(id, ['sh', '-c', 'exit 7'], 10_000)).to.equal(7);
      await h.engine.containers.stop(id, 0);
      expect(classify(await rejection(h.engine.containers.exec(id, ['true'], 10_000)))).to.equal('conflict');
      await h.engine.containers.remove(id);
      expect(classify(await rejection(h.engine.containers.exec(id, ['true'], 10_000)))).to.equal('not-found');
    });

    it('execStart streams stdout and stderr apart, takes input, and gives the exit code; reach finds the container; a stopped one is 409', async function () {
      const id = await h.engine.containers.create(containerSpec(h, h.name('exst'), ['sleep', '60']));
      await h.engine.containers.start(id);
      const text = async (r: NodeJS.ReadableStream) => {
        const chunks: Buffer[] = [];
        for await (const c of r) chunks.push(c as Buffer);
        return Buffer.concat(chunks).toString('utf8');
      };
      const reached = await h.engine.reach(id);
      expect(reached.id).to.equal(id);
      const s = await reached.engine.containers.execStart(id, { cmd: ['sh', '-c', 'echo out; echo err >&2; exit 3'] });
      const [out, err] = await Promise.all([text(s.stdout), text(s.stderr)]);
      expect([out, err, await s.exit]).to.deep.equal(['out\n', 'err\n', 3]);
      const cat = await h.engine.containers.execStart(id, { cmd: ['sh', '-c', 'cat'], stdin: true });
      cat.stdin?.end('typed\n');
      expect(await text(cat.stdout)).to.equal('typed\n');
      expect(await cat.exit).to.equal(0);
      await h.engine.containers.stop(id, 0);
      expect(classify(await rejection(h.engine.containers.execStart(id, { cmd: ['true'] })))).to.equal('conflict');
      await h.engine.containers.remove(id);
    });

    it('getArchive reads a path out of a stopped container as a tar of <basename>/...; a missing path is 404', async function () {
      const get = (id: string, path: string) => getArchive(h, id, path);
      const id = await h.engine.containers.create(containerSpec(h, h.name('archive'), ['sh', '-c', 'exit 0']));
      const p = pack();
      p.entry({ name: 'wsx/', type: 'directory', mode: 0o755 });
      p.entry({ name: 'wsx/a.txt', mode: 0o640 }, Buffer.from('hello\n'));
      p.finalize();
      const chunks: Buffer[] = [];
      for await (const c of p) chunks.push(c as Buffer);
      await h.engine.containers.putArchive(id, '/', Buffer.concat(chunks));
      await h.engine.containers.start(id);
      await h.exited(id, 0);
      const seen: string[] = [];
      const ex = extract();
      const reading = (async () => {
        for await (const e of ex) {
          const body: Buffer[] = [];
          for await (const c of e) body.push(c as Buffer);
          seen.push(`${e.header.name} ${e.header.type} ${(e.header.mode ?? 0) & 0o777} ${Buffer.concat(body).toString()}`);
        }
      })();
      (await get(id, '/wsx')).pipe(ex);
      await reading;
      expect(seen).to.deep.equal(['wsx/ directory 493 ', 'wsx/a.txt file 416 hello\n']);
      expect(classify(await rejection(get(id, '/no-such-path')))).to.equal('not-found');
      await h.engine.containers.remove(id);
    });

    it("a file the container writes below a bind mount is on the host, at the bind's source", async function () {
      const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-contract-bind-'));
      try {
        const spec = containerSpec(h, h.name('bind'), WRITE_FILE('bound', '/b/out.txt'));
        spec.host.binds = [`${dir}:/b:rw`];
        const id = await h.engine.containers.create(spec);
        await h.engine.containers.start(id);
        await h.exited(id, 0);
        expect(await fs.readFile(path.join(dir, 'out.txt'), 'utf8')).to.equal('bound');
        await h.engine.containers.remove(id);
      } finally {
        await fs.rm(dir, { recursive: true, force: true });
      }
    });

    it('a network lists the running containers connected to it', async function () {
      const net = h.name('members');
      await h.engine.networks.create({ name: net, labels: h.labels, internal: true });
      const spec = containerSpec(h, h.name('member'), ['sleep', '60']);
      const id = await h.engine.containers.create({ ...spec, host: { ...spec.host, networkMode: net } });
      await h.engine.containers.start(id);
      expect((await h.engine.networks.inspect(net)).containers).to.deep.equal([id]);
      expect((await h.engine.containers.inspect(id)).networks).to.deep.equal([net]);
      expect(classify(await rejection(h.engine.networks.remove(net)))).to.equal('other'); // active endpoints
      await h.engine.containers.remove(id);
      expect(await h.engine.networks.remove(net)).to.equal(true);
    });

    it("a container's OOM kill is an `oom` event that events.first finds from its start; an exit by SIGKILL has none by `until`", async function () {
      if (!h.engine.events.first) throw new Error('the engine has no events.first');
      const spec = containerSpec(h, h.name('oom'), MEMORY_BOMB);
      const oom = await h.engine.containers.create({ ...spec, host: { ...spec.host, memory: 16 * 1024 * 1024, memorySwap: 16 * 1024 * 1024 } });
      const killed = await h.engine.containers.create(containerSpec(h, h.name('kill9'), ['sh', '-c', 'sh -c "kill -9 \\$\\$"; exit $?']));
      await h.engine.containers.start(oom);
      await h.engine.containers.start(killed);
      await h.oomKilled(oom);
      await h.exited(killed, 137);
      const window = async (id: string) => {
        const st = (await h.engine.containers.inspect(id)).runState;
        return { since: Math.floor(Date.parse(st.startedAt) / 1000), until: Date.parse(st.finishedAt) / 1000 + 1 };
      };
      const found = await h.engine.events.first(oom, ['oom'], await window(oom));
      expect([found?.type, found?.action, found?.id]).to.deep.equal(['container', 'oom', oom]);
      const t0 = Date.now();
      const w = await window(killed);
      expect(await h.engine.events.first(killed, ['oom'], w)).to.equal(undefined);
      // it waited for one until `until`, no longer (a second of slack for the engine's answer)
      expect(Date.now()).to.be.within(Math.min(w.until * 1000, t0) - 1, Math.max(w.until * 1000, t0) + 1000);
      await h.engine.containers.remove(oom);
      await h.engine.containers.remove(killed);
    });

    it('container events create, start, die, destroy carry the container labels as attributes', async function () {
      const tag = h.name('events');
      const ac = new AbortController();
      const since = Math.floor(Date.now() / 1000) - 1;
      const stream = await h.engine.events.stream([`dev.berth.contract/case=${tag}`], { since, signal: ac.signal });
      const id = await h.engine.containers.create(containerSpec(h, tag, ['sh', '-c', 'exit 0'], { 'dev.berth.contract/case': tag }));
      await h.engine.containers.start(id);
      await h.exited(id, 0);
      await h.engine.containers.remove(id);
      const seen: EngineEvent[] = [];
      for await (const e of stream) {
        if (e.type !== 'container') continue;
        seen.push(e);
        if (e.action === 'destroy') break;
      }
      ac.abort();
      expect(seen.map((e) => e.action)).to.deep.equal(['create', 'start', 'die', 'destroy']);
      for (const e of seen) {
        expect(e.id).to.equal(id);
        expect(e.attributes['dev.berth.contract/case']).to.equal(tag);
        expect(e.attributes.name).to.equal(tag);
      }
      expect(seen[2]?.attributes.exitCode).to.equal('0');

      // a stream opened afterwards with `since` replays them, in order
      const ac2 = new AbortController();
      const again = await h.engine.events.stream([`dev.berth.contract/case=${tag}`], { since, signal: ac2.signal });
      const replayed: string[] = [];
      for await (const e of again) {
        if (e.type !== 'container') continue;
        replayed.push(e.action);
        if (e.action === 'destroy') break;
      }
      ac2.abort();
      expect(replayed).to.deep.equal(['create', 'start', 'die', 'destroy']);
    });

    it('a tag made is an image event (whatever the labels), listed on the image with no filter, inspected to the same id; a container made from the id reports it', async function () {
      const ref = `berth-contract/${h.name('tag')}:v1`;
      const ac = new AbortController();
      const since = Math.floor(Date.now() / 1000) - 1;
      expect(h.engine.events.images, 'the engine follows image events').to.be.a('function');
      const stream = await h.engine.events.images!({ since, signal: ac.signal });
      const base = await h.engine.images.inspect(h.image);
      expect(base.id).to.match(/^sha256:[0-9a-f]{64}$/);
      expect(base.repoDigests).to.be.an('array');
      expect(classify(await rejection(h.engine.images.inspect(ref)))).to.equal('not-found');
      await h.tag(base.id, ref);
      try {
        const seen: EngineEvent[] = [];
        for await (const e of stream) {
          seen.push(e);
          if (e.type === 'image' && e.action === 'tag' && e.attributes.name === ref) break;
        }
        ac.abort();
        expect(seen.at(-1)?.id).to.equal(base.id);
        const all = await h.engine.images.list([]);
        const listed = all.find((i) => i.id === base.id);
        expect(listed?.tags).to.include(ref).and.to.include(h.image);
        expect(listed?.repoDigests).to.deep.equal(base.repoDigests);
        const tagged = await h.engine.images.inspect(ref);
        expect(tagged.id).to.equal(base.id);
        const id = await h.engine.containers.create({ ...containerSpec(h, h.name('by-id'), ['true']), image: base.id });
        const c = await h.engine.containers.inspect(id);
        expect(c.imageId).to.equal(base.id);
        expect(c.config.image).to.equal(base.id);
        expect((await h.engine.containers.list([`${Object.keys(h.labels)[0]}=${Object.values(h.labels)[0]}`])).find((x) => x.id === id)?.imageId).to.equal(
          base.id,
        );
        await h.engine.containers.remove(id);
      } finally {
        ac.abort();
        await h.untag(ref);
      }
      expect(classify(await rejection(h.engine.images.inspect(ref)))).to.equal('not-found');
      expect((await h.engine.images.inspect(h.image)).id).to.equal(base.id);
    });

    if (o.registry)
      it('a pull with the credential resolves with the id and the digest, reports bytes as it goes, and the image then lists with that repo digest; without it: unauthorized; an unknown tag: not-found', async function () {
        if (!h.registry) throw new Error('the harness gives no registry');
        const pull = h.engine.images.pull.bind(h.engine.images);
        const r = await h.registry();
        expect(classify(await rejection(h.engine.images.inspect(r.ref)))).to.equal('not-found');
        const denied = await rejection(pull(r.ref, {}));
        expect(denied).to.be.instanceOf(ImagePullError);
        expect((denied as ImagePullError).kind).to.equal('unauthorized');
        const missing = await rejection(pull(r.missing, { auth: r.auth }));
        expect((missing as ImagePullError).kind).to.equal('not-found');
        const seen: PullProgress[] = [];
        const got = await pull(r.ref, { auth: r.auth, onProgress: (p) => seen.push(p) });
        expect(got.id).to.match(/^sha256:[0-9a-f]{64}$/);
        expect(got.digest).to.match(/^sha256:[0-9a-f]{64}$/);
        const last = seen.at(-1);
        expect(last?.total, 'bytes of its layers').to.be.greaterThan(0);
        expect(last?.done).to.equal(last?.total);
        const listed = (await h.engine.images.list([])).find((i) => i.id === got.id);
        expect(listed?.repoDigests).to.include(`${r.ref.slice(0, r.ref.lastIndexOf(':'))}@${got.digest ?? ''}`);
        expect((await h.engine.images.inspect(r.ref)).id).to.equal(got.id);
      });

    it('save then load of a tag gives the same image back under that tag', async function () {
      const ref = `berth-contract/${h.name('saved')}:v1`;
      const base = await h.engine.images.inspect(h.image);
      await h.tag(base.id, ref);
      const chunks: Buffer[] = [];
      for await (const c of await h.engine.images.save(ref)) chunks.push(c as Buffer);
      await h.untag(ref);
      expect(classify(await rejection(h.engine.images.inspect(ref)))).to.equal('not-found');
      await h.engine.images.load(Readable.from([Buffer.concat(chunks)]));
      try {
        expect((await h.engine.images.inspect(ref)).id).to.equal(base.id);
      } finally {
        await h.untag(ref);
      }
      expect(classify(await rejection(h.engine.images.save(`berth-contract/${h.name('never')}:v1`)))).to.equal('not-found');
    });

    it('an image whose tag was rebuilt FROM it (an untagged parent) is listed with no filter, without tags, and inspected by its id', async function () {
      const ref = `berth-contract/${h.name('parent')}:v1`;
      const parent = await h.rebuild(ref);
      try {
        const child = await h.rebuild(ref);
        expect(child).to.not.equal(parent);
        const all = await h.engine.images.list([]);
        expect(all.find((i) => i.id === child)?.tags).to.include(ref);
        const listed = all.find((i) => i.id === parent);
        expect(listed, 'the untagged parent is listed').to.not.equal(undefined);
        expect(listed?.tags).to.deep.equal([]);
        expect((await h.engine.images.inspect(parent)).id).to.equal(parent);
      } finally {
        await h.removeBuilt(ref);
      }
    });

    it('a build tags and labels its image, saying each step; a failing step is a BuildError with its exit code; rmi of the tag deletes it, again is false', async function () {
      const context = (dockerfile: string) => {
        const p = pack();
        p.entry({ name: 'Dockerfile', mode: 0o644 }, dockerfile);
        p.entry({ name: 'x.txt', mode: 0o644 }, 'x');
        p.finalize();
        return p as unknown as NodeJS.ReadableStream;
      };
      const tag = `berth-build/${h
        .name('build')
        .replace(/[^a-z0-9]/g, '')
        .slice(-16)}`;
      const labels = { ...h.labels, 'dev.berth.build': 'contract' };
      const said: string[] = [];
      const built = await h.engine.builds!.build(context(`FROM ${h.image}\nCOPY x.txt /x.txt\n`), {
        tag,
        labels,
        dockerfile: 'Dockerfile',
        args: {},
        network: 'none',
        onMessage: (m) => void (m.stream && said.push(m.stream)),
      });
      try {
        expect(built.id).to.match(/^sha256:[0-9a-f]{64}$/);
        // FROM, COPY, then one LABEL step per label (the classic builder's way)
        expect(said.filter((l) => l.startsWith('Step ')).map((l) => l.replace(/ :.*$/, ''))).to.deep.equal(['Step 1/4', 'Step 2/4', 'Step 3/4', 'Step 4/4']);
        const i = await h.engine.images.inspect(tag);
        expect(i.id).to.equal(built.id);
        expect(i.labels).to.include(labels);
        const failed = await rejection(
          h.engine.builds!.build(context(`FROM ${h.image}\nRUN exit 3\n`), {
            tag: `${tag}-failed`,
            labels,
            dockerfile: 'Dockerfile',
            args: {},
            network: 'none',
          }),
        );
        expect(failed).to.be.instanceOf(BuildError);
        expect((failed as BuildError).code).to.equal(3);
        expect((failed as BuildError).text).to.contain('returned a non-zero code: 3');
      } finally {
        expect(await h.engine.images.remove(tag)).to.equal(true);
      }
      expect(await h.engine.images.remove(tag)).to.equal(false);
      expect(classify(await rejection(h.engine.images.inspect(tag)))).to.equal('not-found');
    });

    it('a volume in use cannot be removed (409); a container mounting a volume name that does not exist makes it', async function () {
      const vol = h.name('inuse');
      await h.engine.volumes.create({ name: vol, labels: h.labels });
      const spec = containerSpec(h, h.name('user'), ['true']);
      const id = await h.engine.containers.create({
        ...spec,
        host: { ...spec.host, mounts: [{ type: 'volume', source: vol, target: '/data', readOnly: false }] },
      });
      expect(classify(await rejection(h.engine.volumes.remove(vol)))).to.equal('conflict');
      const c = await h.engine.containers.inspect(id);
      expect(c.mounts.map((m) => [m.type, m.name, m.destination, m.rw])).to.deep.equal([['volume', vol, '/data', true]]);
      await h.engine.containers.remove(id);
      expect(await h.engine.volumes.remove(vol)).to.equal(true);
    });

    it('connect attaches a container to a second network; connecting it again is refused', async function () {
      const a = h.name('net-a');
      const b = h.name('net-b');
      await h.engine.networks.create({ name: a, labels: h.labels, internal: true });
      const bId = await h.engine.networks.create({ name: b, labels: h.labels, internal: true });
      const spec = containerSpec(h, h.name('two-nets'), ['sleep', '60']);
      const id = await h.engine.containers.create({ ...spec, host: { ...spec.host, networkMode: a } });
      await h.engine.networks.connect(b, id);
      expect((await h.engine.containers.inspect(id)).networks).to.deep.equal([a, b].sort());
      await h.engine.containers.start(id);
      expect((await h.engine.networks.inspect(bId)).containers).to.deep.equal([id]);
      expect((await h.engine.containers.list(Object.entries(h.labels).map(([k, v]) => `${k}=${v}`))).find((c) => c.id === id)?.networkIds).to.include(bId);
      expect(classify(await rejection(h.engine.networks.connect(b, id)))).to.equal('other');
      await h.engine.containers.remove(id);
      await h.engine.networks.remove(a);
      await h.engine.networks.remove(b);
    });
  });
}
