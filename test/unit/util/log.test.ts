/** The CLI's logger: winston loads on first use only, and the text format is as documented. */
import { expect } from 'chai';
import { execFileSync, spawnSync } from 'node:child_process';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { createLogger } from '../../../src/util/log';

const MODULE = path.resolve(__dirname, '../../../src/util/log.ts');

describe('util/log', () => {
  it('does not load winston until the logger is used', () => {
    const code = `
      const loaded = () => Object.keys(require.cache).some((k) => k.includes('/node_modules/winston/'));
      const { createLogger } = require(${JSON.stringify(MODULE)});
      const log = createLogger({ level: 'info' });
      const before = loaded();
      log.level;
      process.stdout.write(JSON.stringify([before, loaded()]));`;
    const out = execFileSync(process.execPath, ['--require', 'tsx/cjs', '-e', code], { encoding: 'utf8' });
    expect(JSON.parse(out)).to.deep.equal([false, true]);
  });

  it('loads nothing for a child logger or a message below its level, and writes once a message is at its level', () => {
    const code = `
      const loaded = () => Object.keys(require.cache).some((k) => k.includes('/node_modules/winston/'));
      const { createLogger } = require(${JSON.stringify(MODULE)});
      const log = createLogger({ level: 'warn' });
      const pass = log.child({ pass: 1 });
      const attempt = pass.child({ attempt: 'a' });
      const same = attempt.info('below warn');
      log.debug('below warn');
      const quiet = loaded();
      attempt.warn('written');
      process.stdout.write(JSON.stringify([quiet, same === attempt, loaded()]));`;
    const res = spawnSync(process.execPath, ['--require', 'tsx/cjs', '-e', code], { encoding: 'utf8' });
    expect(JSON.parse(res.stdout)).to.deep.equal([false, true, true]);
    // The child's fields, from both generations, on the one line written.
    const lines = res.stderr.trim().split('\n');
    expect(lines).to.have.length(1);
    expect(lines[0]).to.match(/ warn {2}written /);
    expect(lines[0]).to.include('pass=1').and.include('attempt=a');
  });

  it('follows a level set after a child was made', async () => {
    const stream = new PassThrough();
    let text = '';
    stream.on('data', (c: Buffer) => (text += c.toString()));
    const log = createLogger({ level: 'info', stream });
    const child = log.child({ pass: 2 });
    log.level = 'debug';
    child.debug('now shown');
    await new Promise((r) => setImmediate(r));
    expect(text).to.match(/ debug now shown pass=2\n$/);
  });

  it('writes `time level message key=value` lines at or above its level; children add their fields', async () => {
    const stream = new PassThrough();
    let text = '';
    stream.on('data', (c: Buffer) => (text += c.toString()));
    const log = createLogger({ level: 'info', stream });
    log.debug('hidden');
    log.child({ reconcileId: 'r1', attempt: 'a' }).info('pass done', { calls: 4, run: 2 });
    log.warn('careful');
    await new Promise((r) => setImmediate(r));
    const lines = text.trim().split('\n');
    expect(lines).to.have.length(2);
    // a batch's reconcileId and engine call counts are left to --log-format json (issue 54)
    expect(lines[0]).to.match(/^\d\d:\d\d:\d\d\.\d{3} info {2}pass done (attempt=a run=2|run=2 attempt=a)$/);
    expect(lines[1]).to.match(/^\d\d:\d\d:\d\d\.\d{3} warn {2}careful$/);
  });

  it('the JSON format keeps the reconcileId and call counts the text format leaves out', async () => {
    const stream = new PassThrough();
    let text = '';
    stream.on('data', (c: Buffer) => (text += c.toString()));
    createLogger({ level: 'info', format: 'json', stream }).child({ reconcileId: 'r1' }).info('pass done', { calls: 4 });
    await new Promise((r) => setImmediate(r));
    expect(JSON.parse(text.trim())).to.include({ message: 'pass done', reconcileId: 'r1', calls: 4 });
  });
});
