/** Requests to a running controller as files in the state folder: taken once, answered, withdrawn; what is not a request is refused. */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { answerRequest, awaitAnswer, requestsDir, sendRequest, takeRequests } from '../../../src/status/requests';

describe('controller requests (state folder files)', function () {
  let state: string;
  beforeEach(async function () {
    state = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-requests-'));
  });
  afterEach(async function () {
    await fs.rm(state, { recursive: true, force: true });
  });

  it('a request is taken once, answered, and the answer read once; the folder is left empty and private', async function () {
    const id = await sendRequest(state, 'i', 'rerun', ['a', 'b']);
    expect((await fs.stat(requestsDir(state, 'i'))).mode & 0o777).to.equal(0o700);
    const taken = await takeRequests(state, 'i');
    expect(taken).to.have.length(1);
    const t = taken[0];
    if (!t || !('request' in t)) throw new Error('not taken');
    expect([t.request.id, t.request.command, t.request.names]).to.deep.equal([id, 'rerun', ['a', 'b']]);
    expect(await takeRequests(state, 'i')).to.deep.equal([]);
    await answerRequest(state, 'i', {
      id,
      results: [
        { name: 'a', ops: ['begin-run'] },
        { name: 'b', refused: 'no' },
      ],
    });
    const got = await awaitAnswer(state, 'i', id, { timeoutMs: 1000 });
    expect(got).to.deep.equal({
      answer: {
        id,
        results: [
          { name: 'a', ops: ['begin-run'] },
          { name: 'b', refused: 'no' },
        ],
      },
    });
    expect(await fs.readdir(requestsDir(state, 'i'))).to.deep.equal([]);
  });

  it('not taken in time: withdrawn (nothing done); taken but not answered: said so', async function () {
    const id = await sendRequest(state, 'i', 'delete', ['a']);
    expect(await awaitAnswer(state, 'i', id, { timeoutMs: 50, pollMs: 10 })).to.deep.equal({ withdrawn: true });
    expect(await takeRequests(state, 'i')).to.deep.equal([]);
    const id2 = await sendRequest(state, 'i', 'delete', ['a']);
    expect(await takeRequests(state, 'i')).to.have.length(1);
    expect(await awaitAnswer(state, 'i', id2, { timeoutMs: 50, pollMs: 10 })).to.deep.equal({ taken: true });
  });

  it('a controller gone before it took the request: withdrawn at once', async function () {
    const id = await sendRequest(state, 'i', 'rerun', ['a']);
    // gone() is asked after a second of waiting; the time limit (60 s) is past the test's own, so
    // an answer within the test came from gone()
    let asked = 0;
    const gone = () => (asked++, Promise.resolve(true));
    expect(await awaitAnswer(state, 'i', id, { timeoutMs: 60_000, pollMs: 20, gone })).to.deep.equal({ withdrawn: true });
    expect(asked).to.equal(1);
  });

  it('what is not a request is refused, not carried out: a link, bad JSON, an unknown command, names that are not attempt names', async function () {
    const dir = requestsDir(state, 'i');
    await fs.mkdir(dir, { recursive: true });
    const target = path.join(state, 'elsewhere.json');
    await fs.writeFile(target, JSON.stringify({ id: 'a'.repeat(32), command: 'rerun', names: ['x'] }));
    await fs.symlink(target, path.join(dir, `${'a'.repeat(32)}.request.json`));
    await fs.writeFile(path.join(dir, `${'b'.repeat(32)}.request.json`), '{not json');
    await fs.writeFile(path.join(dir, `${'c'.repeat(32)}.request.json`), JSON.stringify({ id: 'c'.repeat(32), command: 'clean', names: ['x'] }));
    await fs.writeFile(path.join(dir, `${'d'.repeat(32)}.request.json`), JSON.stringify({ id: 'd'.repeat(32), command: 'delete', names: ['../x'] }));
    await fs.writeFile(path.join(dir, 'README.request.json'), '{}'); // not a request's name: left alone
    const taken = await takeRequests(state, 'i');
    expect(taken.map((t) => ('refused' in t ? `${t.id.slice(0, 1)}: ${t.refused}` : 'carried'))).to.deep.equal([
      'a: request refused: not a regular file',
      `b: request refused: ${(() => {
        try {
          JSON.parse('{not json');
        } catch (e) {
          return (e as Error).message;
        }
        return '';
      })()}`,
      'c: request refused: unknown command "clean"',
      'd: request refused: names: a list of attempt names expected',
    ]);
    expect((await fs.readdir(dir)).sort()).to.include('README.request.json');
  });
});
