/**
 * The entry point as a process (through tsx, no bundle needed): exit 2 with every problem on a
 * bad configuration, the exact `listening` line on stdout, decision lines, and exit 0 on
 * SIGTERM. Waits on output and exit events only.
 */
import { expect } from 'chai';
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import path from 'node:path';
import { closeServer, listen, proxyRequest } from './harness';
import http from 'node:http';

const ROOT = path.resolve(__dirname, '../../..');

function runMain(env: Record<string, string>): ChildProcessWithoutNullStreams {
  return spawn(process.execPath, ['--require', 'tsx/cjs', 'src/proxy/main.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', ...env },
  });
}

function exited(child: ChildProcessWithoutNullStreams): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
}

/** Collects stdout lines; resolves `first` with the first one. */
function stdoutLines(child: ChildProcessWithoutNullStreams): { lines: string[]; next: () => Promise<string> } {
  const lines: string[] = [];
  let buffered = '';
  let waiters: ((l: string) => void)[] = [];
  let read = 0;
  child.stdout.on('data', (c: Buffer) => {
    buffered += c.toString();
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      lines.push(buffered.slice(0, nl));
      buffered = buffered.slice(nl + 1);
    }
    while (waiters.length > 0 && read < lines.length) {
      const w = waiters[0] as (l: string) => void;
      waiters = waiters.slice(1);
      w(lines[read++] as string);
    }
  });
  return {
    lines,
    next: () => (read < lines.length ? Promise.resolve(lines[read++] as string) : new Promise((resolve) => waiters.push(resolve))),
  };
}

describe('proxy/main (process)', function () {
  this.timeout(20000);

  it('exits 2 before listening, naming every bad setting on stderr', async () => {
    const child = runMain({ BERTH_EGRESS_ALLOW: 'good.com:443,bad-entry,*:1', BERTH_PROXY_PORT: 'x' });
    let stderr = '';
    let stdout = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    const { code } = await exited(child);
    expect(code).to.equal(2);
    expect(stdout).to.equal('');
    expect(stderr).to.equal(
      [
        'berth-egress-proxy: BERTH_EGRESS_ALLOW: entry 2 "bad-entry": missing :port',
        'berth-egress-proxy: BERTH_EGRESS_ALLOW: entry 3 "*:1": a bare * would allow every host; write *.example.com',
        'berth-egress-proxy: BERTH_PROXY_PORT="x": expected an integer from 0 to 65535',
        '',
      ].join('\n'),
    );
  });

  it('prints the listening line first, logs decisions, and exits 0 on SIGTERM', async () => {
    const origin = http.createServer((_req, res) => res.end('hi'));
    const originPort = await listen(origin);
    const child = runMain({
      BERTH_EGRESS_ALLOW: `127.0.0.1:${originPort},*.Example.com:443`,
      BERTH_PROXY_PORT: '0',
      BERTH_PROXY_LISTEN: '127.0.0.1',
    });
    const exit = exited(child);
    try {
      const out = stdoutLines(child);
      const first = await out.next();
      const port = (JSON.parse(first) as { port: number }).port;
      expect(first).to.equal(`{"event":"listening","port":${port},"allow":["127.0.0.1:${originPort}","*.example.com:443"]}`);
      const reply = await proxyRequest(port, `http://127.0.0.1:${originPort}/`);
      expect(reply.body).to.equal('hi');
      const decision = JSON.parse(await out.next()) as Record<string, unknown>;
      expect(decision).to.include({ event: 'decision', method: 'GET', target: `127.0.0.1:${originPort}`, status: 200 });
      child.kill('SIGTERM');
      expect(await exit).to.deep.equal({ code: 0, signal: null });
    } finally {
      child.kill('SIGKILL');
      await closeServer(origin);
    }
  });
});
