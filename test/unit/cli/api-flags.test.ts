/** The API's flags (src/cli/commands/api.ts): checked before anything starts; TCP on loopback only, with a token file. */
import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { apiToken, isLoopback } from '../../../src/cli/commands/api';
import { makeContext, UsageError } from '../../../src/cli/context';
import { bufferIo } from '../../../src/cli/io';

describe('API flags', function () {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(path.join(os.tmpdir(), 'berth-api-flags-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const ctx = () => makeContext({ specs: path.join(dir, 'specs'), state: path.join(dir, 'state'), instance: 'flags', logLevel: 'error' }, bufferIo());
  const refused = async (o: Parameters<typeof apiToken>[1]): Promise<string> => {
    const err = await apiToken(ctx(), o).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).to.be.instanceOf(UsageError);
    return (err as Error).message;
  };

  it('loopback hosts only', function () {
    for (const h of ['127.0.0.1', '127.1.2.3', '::1', 'localhost', 'LOCALHOST', '::ffff:127.0.0.1']) expect(isLoopback(h), h).to.equal(true);
    for (const h of ['0.0.0.0', '::', '10.0.0.1', '128.0.0.1', '127.0.0.256', 'example.com', '::ffff:10.0.0.1', '']) expect(isLoopback(h), h).to.equal(false);
  });

  it('--api-addr on another host than loopback, without a token file, or with a short token is refused; the token is never in the message', async function () {
    const token = path.join(dir, 'token');
    writeFileSync(token, 'a-secret-token-of-enough-length\n', { mode: 0o600 });
    expect(await refused({ apiAddr: '0.0.0.0:9465', apiTokenFile: token })).to.match(/^--api-addr 0\.0\.0\.0:9465: the API listens on loopback only/);
    expect(await refused({ apiAddr: '[::]:9465', apiTokenFile: token })).to.match(/loopback only/);
    expect(await refused({ apiAddr: 'nonsense', apiTokenFile: token })).to.match(/expected host:port/);
    expect(await refused({ apiAddr: '127.0.0.1:9465' })).to.match(/needs --api-token-file/);
    expect(await refused({ apiTokenFile: token })).to.match(/goes with --api-addr/);
    const short = path.join(dir, 'short');
    writeFileSync(short, 'short-secret\n', { mode: 0o600 });
    const m = await refused({ apiAddr: '127.0.0.1:9465', apiTokenFile: short });
    expect(m).to.match(/at least 16 characters/);
    expect(m).not.to.include('short-secret');
    expect(await apiToken(ctx(), { apiAddr: '127.0.0.1:9465', apiTokenFile: token })).to.equal('a-secret-token-of-enough-length');
    expect(await apiToken(ctx(), { apiAddr: '[::1]:9465', apiTokenFile: token })).to.equal('a-secret-token-of-enough-length');
    expect(await apiToken(ctx(), {})).to.equal(undefined);
  });
});
