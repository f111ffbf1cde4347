/** `get --limit/--continue` (issue 55): pages in name order or --sort-by order, their tokens, and what is refused. */
import { expect } from 'chai';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { run } from '../../../src/cli/index';
import { bufferIo } from '../../../src/cli/io';
import { encodeToken, pageOf } from '../../../src/cli/commands/page';
import { status } from '../../support/builders';

const rows = (...names: string[]) => names.map((name) => ({ name }));

describe('get: pages (--limit, --continue)', function () {
  it('pageOf: name order, each page after the last name of the one before, the last without a token', () => {
    const all = rows('a', 'b', 'c', 'd', 'e');
    const p1 = pageOf(all, { limit: 2 });
    expect([p1.rows.map((r) => r.name), p1.before, p1.next?.remainingItemCount]).to.deep.equal([['a', 'b'], 0, 3]);
    const p2 = pageOf(all, { limit: 2, continue: p1.next?.continue as string });
    expect([p2.rows.map((r) => r.name), p2.before, p2.next?.remainingItemCount]).to.deep.equal([['c', 'd'], 2, 1]);
    const p3 = pageOf(all, { limit: 2, continue: p2.next?.continue as string });
    expect([p3.rows.map((r) => r.name), p3.next]).to.deep.equal([['e'], undefined]);
    // a name removed meanwhile: the page still starts after the token's name
    expect(pageOf(rows('a', 'c', 'e'), { limit: 2, continue: p1.next?.continue as string }).rows.map((r) => r.name)).to.deep.equal(['c', 'e']);
    expect(pageOf(all, {}).rows).to.equal(all);
  });

  it('pageOf: --sort-by pages by position, and a token of one order is refused in the other', () => {
    const all = rows('e', 'd', 'c');
    const p1 = pageOf(all, { limit: 2, sortBy: '.status.x' });
    expect(p1.rows.map((r) => r.name)).to.deep.equal(['e', 'd']);
    expect(pageOf(all, { limit: 2, sortBy: '.status.x', continue: p1.next?.continue as string }).rows.map((r) => r.name)).to.deep.equal(['c']);
    expect(() => pageOf(all, { limit: 2, continue: p1.next?.continue as string })).to.throw(/sorted by \.status\.x; give the same --sort-by/);
    expect(() => pageOf(all, { sortBy: '.y', continue: p1.next?.continue as string })).to.throw(/give the same --sort-by/);
    expect(() => pageOf(all, { continue: encodeToken({ v: 1, after: 'd' }), sortBy: '.y' })).to.throw(/in name order/);
    for (const bad of ['x', Buffer.from('{"v":2}').toString('base64url'), Buffer.from('{"v":1,"offset":-1,"sortBy":"a"}').toString('base64url')])
      expect(() => pageOf(all, { continue: bad })).to.throw(/not a token berth get gave/);
  });

  describe('the command', function () {
    let dir: string;
    let args: string[];
    before(function () {
      dir = mkdtempSync(path.join(os.tmpdir(), 'berth-page-'));
      mkdirSync(path.join(dir, 'specs'));
      const records = path.join(dir, 'state', 'default', 'attempts');
      mkdirSync(records, { recursive: true });
      for (const n of ['a1', 'a2', 'a3', 'a4', 'a5']) {
        writeFileSync(
          path.join(dir, 'specs', `${n}.yaml`),
          `apiVersion: berth.dev/v1\nkind: Attempt\nmetadata: {name: ${n}}\nspec:\n  image: busybox\n  command: ["true"]\n`,
        );
        writeFileSync(path.join(records, `${n}.json`), JSON.stringify(status(n, { phase: 'Succeeded', reason: 'Completed', exitCode: 0 })));
      }
      args = ['--specs', path.join(dir, 'specs'), '--state', path.join(dir, 'state')];
    });
    after(() => rmSync(dir, { recursive: true, force: true }));

    async function get(...more: string[]): Promise<{ code: number; out: string; err: string }> {
      const io = bufferIo();
      const code = await run(['node', 'berth', 'get', ...args, ...more], io);
      return { code, out: io.stdout, err: io.stderr };
    }

    it('walks every attempt once, a page at a time, through -o json metadata.continue; the table says on stderr what follows', async function () {
      const seen: string[] = [];
      let token: string | undefined;
      for (let i = 0; i < 5; i++) {
        const r = await get('--limit', '2', '-o', 'json', ...(token ? ['--continue', token] : []));
        expect(r.code, r.err).to.equal(0);
        const doc = JSON.parse(r.out) as { metadata?: { continue: string; remainingItemCount: number }; items: { metadata: { name: string } }[] };
        seen.push(...doc.items.map((it) => it.metadata.name));
        token = doc.metadata?.continue;
        if (!token) break;
        expect(Object.keys(doc)).to.deep.equal(['apiVersion', 'kind', 'metadata', 'items']);
      }
      expect(seen).to.deep.equal(['a1', 'a2', 'a3', 'a4', 'a5']);
      const t = await get('--limit', '2');
      expect(
        t.out
          .trim()
          .split('\n')
          .map((l) => l.split(/\s+/)[0]),
      ).to.deep.equal(['NAME', 'a1', 'a2']);
      expect(t.err).to.match(/^berth: 2 of 5 attempts shown; the next 2: --continue \S+\n$/);
      expect((await get('--limit', '9')).err).to.equal('');
    });

    it('refuses a token it did not give, and --limit with --sets or -w', async function () {
      expect((await get('--continue', 'nope')).code).to.equal(2);
      const sets = await get('--limit', '2', '--sets');
      expect([sets.code, sets.err]).to.deep.equal([2, 'berth: --limit pages a listing of attempts: not with --sets\n']);
      expect((await get('--limit', '0')).code).to.equal(2);
    });
  });
});
