/**
 * A child process for the kill test: switches `<root>` between the revisions of branches `a`
 * and `b` of URL, over and over, the way GitSource.sync() does (fetch, write the revision out,
 * switch `current`, prune the others), until it is killed. Prints one line per switch.
 * Usage: node --import tsx git-switcher.ts ROOT URL
 */
import path from 'node:path';
import { GitMirror } from '../../src/git/mirror';

async function main(): Promise<void> {
  const [root, url] = process.argv.slice(2) as [string, string];
  const m = new GitMirror(root, { home: path.join(root, 'home') });
  await m.init();
  for (let i = 0; ; i++) {
    const sha = await m.fetch(url, i % 2 ? 'a' : 'b');
    await m.materialize(sha, 'specs');
    await m.switchTo(sha);
    await m.prune([sha]);
    process.stdout.write(`${sha}\n`);
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${String(err)}\n`);
  process.exit(1);
});
