/**
 * The engine's data root as a build's disk watch reads it (controller/pass.ts localDataRoot):
 * asked of the engine once (`docker info`, slow to make), not at every tick; a failed ask is
 * asked again.
 */
import { expect } from 'chai';
import { localDataRoot } from '../../../src/controller/pass';
import type { Engine } from '../../../src/engine/types';

function engineAnswering(answers: (() => Promise<{ path: string; local: boolean } | undefined>)[]): { engine: Engine; asked: () => number } {
  let n = 0;
  const engine = {
    local: {
      dataRoot: () => {
        const a = answers[Math.min(n, answers.length - 1)] as () => Promise<{ path: string; local: boolean } | undefined>;
        n++;
        return a();
      },
    },
  } as unknown as Engine;
  return { engine, asked: () => n };
}

describe('localDataRoot', function () {
  it('asks the engine once, however often it is read', async function () {
    const { engine, asked } = engineAnswering([() => Promise.resolve({ path: '/var/lib/docker', local: true })]);
    const read = localDataRoot(engine);
    const got = await Promise.all([read(), read()]);
    expect(got).to.deep.equal(['/var/lib/docker', '/var/lib/docker']);
    expect(await read()).to.equal('/var/lib/docker');
    expect(asked()).to.equal(1);
  });

  it('asks again after a failed ask', async function () {
    const { engine, asked } = engineAnswering([() => Promise.reject(new Error('engine busy')), () => Promise.resolve({ path: '/data', local: true })]);
    const read = localDataRoot(engine);
    let failed: unknown;
    await read().catch((err: unknown) => (failed = err));
    expect((failed as Error).message).to.equal('engine busy');
    expect(await read()).to.equal('/data');
    expect(await read()).to.equal('/data');
    expect(asked()).to.equal(2);
  });

  it('says none for a remote engine', async function () {
    const { engine } = engineAnswering([() => Promise.resolve({ path: '/var/lib/docker', local: false })]);
    expect(await localDataRoot(engine)()).to.equal(undefined);
  });
});
