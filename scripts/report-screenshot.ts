/**
 * A screenshot of a fleet report in Debian's headless chromium (how docs/report.png is made):
 *   node --import tsx scripts/report-screenshot.ts REPORT.html OUT.png
 * Fails when the page logs an error.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { launchBrowser } from '../test/support/browser';

async function main(): Promise<void> {
  const [file, out] = process.argv.slice(2);
  if (!file || !out) throw new Error('usage: node --import tsx scripts/report-screenshot.ts REPORT.html OUT.png');
  const b = await launchBrowser();
  try {
    const page = await b.context.newPage();
    const errors: string[] = [];
    page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(pathToFileURL(path.resolve(file)).href);
    await page.waitForSelector('#shown:not(:empty)');
    if (errors.length) throw new Error(`the page logged errors: ${errors.join('; ')}`);
    await page.screenshot({ path: out, fullPage: true });
  } finally {
    await b.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`report-screenshot: ${(err as Error).message}\n`);
  process.exitCode = 1;
});
