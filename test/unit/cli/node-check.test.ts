/**
 * berth started by a Node older than 22.22 (package.json's `engines`): one line on stderr naming
 * the version it needs and the checkout's own Node, exit 2, nothing loaded, no stack trace. The
 * old Node is this one told to say it is 20 (`--require` a shim), so the test runs on any machine.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const REPO = path.resolve(__dirname, '..', '..', '..');

function asNode(version: string, script: string, args: string[] = ['version']): { status: number | null; stderr: string; stdout: string } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'berth-nodecheck-'));
  try {
    const shim = path.join(dir, 'old-node.cjs');
    writeFileSync(
      shim,
      `Object.defineProperty(process.versions, 'node', { value: '${version}' });\nObject.defineProperty(process, 'version', { value: 'v${version}' });\n`,
    );
    const r = spawnSync(process.execPath, ['--require', shim, script, ...args], { encoding: 'utf8', timeout: 20_000 });
    return { status: r.status, stderr: r.stderr, stdout: r.stdout };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('cli: the Node version check', () => {
  for (const bin of ['bin/berth.js', 'bin/berth-src.cjs']) {
    it(`${bin} on Node 20: exit 2, one line naming 22.22 and the checkout's own Node`, () => {
      const r = asNode('20.19.5', path.join(REPO, bin));
      expect(r.status).to.equal(2);
      expect(r.stdout).to.equal('');
      const lines = r.stderr.trimEnd().split('\n');
      expect(lines, r.stderr).to.have.length(1);
      expect(lines[0]).to.match(
        /^berth: needs Node\.js >= 22\.22, this is v20\.19\.5 \(.+\); (run it with|`make setup` installs one at) .+\/\.node\/bin\/node$/,
      );
    });
  }

  it('22.21 is refused, 22.22 and 24 are not', () => {
    expect(asNode('22.21.9', path.join(REPO, 'bin/berth-src.cjs')).status).to.equal(2);
    for (const v of ['22.22.0', '24.0.0']) {
      const r = asNode(v, path.join(REPO, 'bin/berth-src.cjs'), ['--version']);
      expect(r.status, `${v}: ${r.stderr}`).to.equal(0);
      expect(r.stdout).to.match(/^\d+\.\d+\.\d+/);
    }
  });

  it('outside a checkout (the npm package, berth.cjs) it names no path of its own', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'berth-nodecheck-'));
    try {
      const script = path.join(dir, 'run.cjs');
      writeFileSync(
        script,
        `require(${JSON.stringify(path.join(REPO, 'bin', 'berth.js'))}).checkNode(${JSON.stringify(dir)});\nprocess.stdout.write('not stopped');\n`,
      );
      const r = asNode('20.19.5', script, []);
      expect([r.status, r.stdout]).to.deep.equal([2, '']);
      expect(r.stderr.trim()).to.match(/^berth: needs Node\.js >= 22\.22, this is v20\.19\.5 \(.+\); install a maintained release$/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('package.json, scripts/node-up.sh and bin/berth.js name the same lowest Node', () => {
    const engines = (JSON.parse(readFileSync(path.join(REPO, 'package.json'), 'utf8')) as { engines: { node: string } }).engines.node;
    const setup = /^MIN=(\d+\.\d+)\.0$/m.exec(readFileSync(path.join(REPO, 'scripts', 'node-up.sh'), 'utf8'))?.[1];
    const check = /var MIN = \[(\d+), (\d+)\]/.exec(readFileSync(path.join(REPO, 'bin', 'berth.js'), 'utf8'));
    expect([engines, `>=${setup}`, `>=${check?.[1]}.${check?.[2]}`]).to.deep.equal(['>=22.22', '>=22.22', '>=22.22']);
  });
});
