/**
 * An instance's source binding over the fake engine: kept in a volume's labels, read back as
 * written, replaced whole on a move; a writer from the bound source goes on, one from another
 * source is refused naming both, `--move-instance` rebinds, `clean` binds nothing.
 */
import { expect } from 'chai';
import { bindInstance, refusalMessage } from '../../../src/cli/commands/instance-source';
import { makeContext } from '../../../src/cli/context';
import { bufferIo } from '../../../src/cli/io';
import { BINDING_LABELS, bindingVolumeName } from '../../../src/constants';
import type { Engine } from '../../../src/engine/types';
import {
  BindingUnreadableError,
  describeSource,
  readBinding,
  removeBinding,
  sameSource,
  writeBinding,
  type InstanceSource,
} from '../../../src/status/source-binding';
import { FakeEngine } from '../../support/fake-engine';

const A: InstanceSource = { kind: 'dir', path: '/work/a/specs' };
const B: InstanceSource = { kind: 'dir', path: '/work/b/specs' };
const G: InstanceSource = { kind: 'git', url: 'https://example.test/r.git', path: 'evals' };

function engineOf(f: FakeEngine): Engine {
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
    builds: null,
  };
}

describe('status/source-binding', () => {
  it('names and compares sources', () => {
    expect(describeSource(A)).to.equal('the specs folder /work/a/specs');
    expect(describeSource(G)).to.equal('git https://example.test/r.git (path evals)');
    expect(describeSource({ ...G, path: '' })).to.equal('git https://example.test/r.git (its root)');
    expect(sameSource(A, { kind: 'dir', path: '/work/a/specs' })).to.equal(true);
    expect(sameSource(A, B)).to.equal(false);
    expect(sameSource(G, { ...G, path: 'other' })).to.equal(false);
    expect(sameSource(A, { kind: 'git', url: 'x', path: '/work/a/specs' })).to.equal(false);
  });

  it('is written, read back, replaced whole and removed', async () => {
    const engine = engineOf(new FakeEngine());
    expect(await readBinding(engine, 'i')).to.equal(undefined);
    await writeBinding(engine, 'i', G, { now: new Date('2025-01-01T00:00:00Z'), hostname: 'h' });
    expect(await readBinding(engine, 'i')).to.deep.equal({ source: G, boundAt: '2025-01-01T00:00:00.000Z', hostname: 'h' });
    await writeBinding(engine, 'i', A, { now: new Date('2025-01-02T00:00:00Z'), hostname: 'h' });
    const labels = (await engine.volumes.inspect(bindingVolumeName('i'))).labels;
    expect(labels[BINDING_LABELS.url], 'a move leaves nothing of the old source').to.equal(undefined);
    expect((await readBinding(engine, 'i'))?.source).to.deep.equal(A);
    expect(await removeBinding(engine, 'i')).to.equal(true);
    expect(await readBinding(engine, 'i')).to.equal(undefined);
  });

  it('a volume of that name without the labels is not read as a binding', async () => {
    const engine = engineOf(new FakeEngine());
    await engine.volumes.create({ name: bindingVolumeName('i'), labels: {} });
    await readBinding(engine, 'i').then(
      () => expect.fail('read'),
      (err: unknown) => expect(err).to.be.instanceOf(BindingUnreadableError),
    );
  });

  it('a writer binds an unbound instance, passes from its source, is refused from another, moves it with --move-instance', async () => {
    const engine = engineOf(new FakeEngine());
    const io = bufferIo();
    const ctx = makeContext({ instance: 'i', logLevel: 'error' }, io, { engine });
    expect(await bindInstance(ctx, engine, A, { command: 'reconcile' })).to.equal(true);
    expect((await readBinding(engine, 'i'))?.source).to.deep.equal(A);
    expect(await bindInstance(ctx, engine, A, { command: 'reconcile' })).to.equal(true);
    expect(await bindInstance(ctx, engine, B, { command: 'reconcile' })).to.equal(false);
    expect(io.stderr)
      .to.contain('instance "i" is bound to the specs folder /work/a/specs')
      .and.contain('not to the specs folder /work/b/specs')
      .and.contain('--instance NAME')
      .and.contain('--move-instance');
    expect(await bindInstance(ctx, engine, B, { command: 'clean' })).to.equal(false);
    expect(await bindInstance(ctx, engine, B, { command: 'clean', move: true }), 'clean --move-instance').to.equal(true);
    expect((await readBinding(engine, 'i'))?.source, 'clean binds nothing').to.deep.equal(A);
    expect(await bindInstance(ctx, engine, B, { command: 'reconcile', move: true })).to.equal(true);
    expect((await readBinding(engine, 'i'))?.source).to.deep.equal(B);
    expect(io.stderr).to.contain('moved from the specs folder /work/a/specs to the specs folder /work/b/specs');
  });

  it('the refusal says what would have happened and how out, per command', () => {
    const binding = { source: A, boundAt: 't' };
    expect(refusalMessage('i', binding, G, 'reconcile')).to.contain('reconciling it from here would stop and remove what the specs folder /work/a/specs runs');
    expect(refusalMessage('i', binding, G, 'clean'))
      .to.contain('cleaning it from here would remove')
      .and.contain('--move-instance (clean it anyway)');
  });
});
