/** A reader that went away (`berth ... | head`): the command ends quietly, not with an unhandled EPIPE. */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import path from 'node:path';

const BIN = path.resolve(__dirname, '..', '..', '..', 'bin', 'berth-src.cjs');

describe('cli: stdout closed by its reader', () => {
  it('--help into a closed pipe: exit 0, nothing on stderr', async function () {
    this.timeout(30_000);
    const child = spawn(process.execPath, [BIN, 'reconcile', '--help'], { stdio: ['ignore', 'pipe', 'pipe'] });
    // closed before berth writes anything: its first write fails with EPIPE
    child.stdout.destroy();
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
    expect(stderr).to.equal('');
    expect(code).to.equal(0);
  });
});
