/**
 * The fleet report in a real browser (Debian's chromium, headless; scripts/browser-up.sh installs
 * it): the report of a real fleet run on the engine renders with no console error and no request
 * beyond its own file, sorting, filtering and heatmap-click filtering work, its links reach the
 * run folders, and an axis value `</script><img src=x onerror=alert(1)>` renders as text and
 * runs nothing. A screenshot goes to test-output/report-browser/. The controller's live page
 * reloads itself and keeps the filter. No chromium: the test fails.
 */
import { expect } from 'chai';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Page } from 'playwright-core';
import { launchBrowser, testOutputDir, type Browser } from '../support/browser';
import { startController } from '../support/controller';
import { requireEngine } from '../support/engine';
import { Sandbox } from '../support/sandbox';
import { waitFor } from '../support/wait';

const XSS = '</script><img src=x onerror=alert(1)>';

// 2 models x 2 seeds; m1 scores 1, the other 0. A plain Attempt besides.
const SET = `apiVersion: berth.dev/v1
kind: AttemptSet
metadata:
  name: fleet
  labels: {suite: report}
spec:
  matrix:
    model: [m1, '${XSS}']
    seed: [0, 1]
  template:
    image: berth/busybox:local
    command: [sh, -c, 'sleep 0.3; if [ "\${{ matrix.model }}" = m1 ]; then echo 1; else echo 0; fi > /results/score.json']
  score: {file: score.json, pass: 1}
`;
const SOLO = `apiVersion: berth.dev/v1
kind: Attempt
metadata:
  name: solo
  labels: {suite: report}
spec:
  image: berth/busybox:local
  command: [sh, -c, 'echo hi; exit 3']
  grade:
    command: [sh, -c, 'echo graded; exit 3']
`;

const visibleNames = (page: Page) => page.$$eval('#tbl tbody tr:not([hidden]) td:first-child', (tds) => tds.map((td) => td.textContent ?? ''));

describe('berth report in a browser (real engine, chromium)', function () {
  this.timeout(240_000);
  before(requireEngine);

  let sb: Sandbox;
  let browser: Browser | undefined;
  beforeEach(async function () {
    sb = await Sandbox.create('report');
  });
  afterEach(async function () {
    await browser?.close();
    browser = undefined;
    await sb.destroy();
  });

  it('renders a real fleet with no console error or request; sorts, filters, filters by a heatmap cell; the XSS axis value runs nothing', async function () {
    await sb.write('fleet.yaml', SET);
    await sb.write('solo.yaml', SOLO);
    const ran = await sb.cli('reconcile', '--once', '--wait', '--max-running', '2');
    expect(ran.code, ran.stderr).to.equal(3); // solo exits 3: Failed
    const recs = await sb.store().loadAll();
    expect(recs.size).to.equal(5);
    for (const r of recs.values()) expect(r.provisionedAt, r.name).to.be.a('string');

    const made = await sb.cli('report', '--max-running', '2'); // no -o: <results root>/report.html
    expect(made.code, made.stderr).to.equal(0);
    const file = path.join(sb.resultsRoot, 'report.html');
    expect(made.stdout).to.include(file);
    expect(existsSync(file)).to.equal(true);

    browser = await launchBrowser();
    const page = await browser.context.newPage();
    const problems: string[] = [];
    const requests: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('dialog', (d) => {
      problems.push(`a script ran: dialog ${d.type()} ${d.message()}`);
      void d.dismiss();
    });
    page.on('request', (r) => requests.push(r.url()));
    const url = pathToFileURL(file).href;
    await page.goto(url);
    await page.waitForFunction("/^5 of 5 attempts/.test(document.getElementById('shown').textContent)");

    // The payload is text: no <img> was made, the cells show it, and no script ran (no dialog, no CSP report).
    expect(await page.evaluate('document.images.length')).to.equal(0);
    expect(await page.$$eval('#tbl td', (tds) => tds.filter((td) => (td.textContent ?? '').includes('</script><img src=x onerror=alert(1)>')).length)).to.equal(
      2,
    );
    expect(await page.$$eval('table.heat th.r', (ths) => ths.map((t) => t.textContent))).to.deep.equal(['m1', XSS]);

    // Sorting: by name descending, then by run duration ascending (attempts without one last).
    await page.click('#tbl th[data-k="name"]');
    const asc = await visibleNames(page);
    expect(asc).to.deep.equal([...asc].sort());
    await page.click('#tbl th[data-k="name"]');
    expect(await visibleNames(page)).to.deep.equal([...asc].sort().reverse());
    await page.click('#tbl th[data-k="durationMs"]');
    const durations = await page.$$eval('#tbl tbody tr', (trs) => trs.map((tr) => tr.getAttribute('data-i')));
    const data = ((await page.evaluate("JSON.parse(document.getElementById('report-data').textContent)")) as { attempts: { durationMs: number | null }[] })
      .attempts;
    const ds = durations.map((i) => data[Number(i)]?.durationMs ?? null);
    expect(ds.every((d) => d !== null)).to.equal(true);
    expect(ds).to.deep.equal([...ds].sort((a, b) => (a as number) - (b as number)));

    // Filtering by text: the table and the timeline follow.
    await page.fill('#filter', 'solo');
    expect(await visibleNames(page)).to.deep.equal(['solo']);
    expect(await page.$$eval('.tr[data-i]:not([hidden])', (rs) => rs.length)).to.equal(1);
    await page.fill('#filter', 'model=m1');
    expect((await visibleNames(page)).sort()).to.deep.equal(['fleet-m1-0', 'fleet-m1-1']);
    await page.click('#clear');
    expect(await visibleNames(page)).to.have.length(5);

    // A heatmap cell filters to its attempts; clicking it again clears it.
    const evilCell = page.locator('table.heat tr', { hasText: 'onerror' }).locator('td.c');
    expect(await evilCell.textContent()).to.equal('0/2');
    await evilCell.click();
    const evil = await visibleNames(page);
    expect(evil).to.have.length(2);
    for (const n of evil) expect(n).to.match(/^fleet-script-img-src-x-onerror-alert-1-[01]-[0-9a-f]{10}$/);
    expect(await page.textContent('#shown')).to.match(/^2 of 5 attempts in cell fleet model=<\/script>/);

    // A tooltip from the data, as text.
    await page.hover('.tr[data-i]:not([hidden]) svg');
    expect(await page.textContent('#tip')).to.include('fleet-');
    await evilCell.click();
    expect(await visibleNames(page)).to.have.length(5);

    // Links reach the run's folders (relative to the report at the results root): each run's
    // results, logs, manifest and exported changes, and solo's grade log.
    const links = await page.$$eval('#tbl td.lk a', (as) => as.map((a) => [a.textContent ?? '', a.getAttribute('href') ?? ''] as const));
    const byText: Record<string, number> = {};
    for (const [t] of links) byText[t] = (byText[t] ?? 0) + 1;
    expect(byText).to.deep.equal({ results: 5, logs: 5, manifest: 5, patch: 5, 'grade log': 1 });
    expect(links.find(([t]) => t === 'grade log')?.[1]).to.equal('solo/run-1/grade-1/logs.txt');
    for (const [, h] of links) expect(existsSync(fileURLToPath(new URL(h, url).href)), h).to.equal(true);
    expect(await page.$$eval('#tbl tbody tr', (trs) => trs.filter((tr) => tr.textContent?.includes('grade-1: fail')).length)).to.equal(1);

    const out = testOutputDir('report-browser');
    mkdirSync(out, { recursive: true });
    await page.screenshot({ path: path.join(out, 'report.png'), fullPage: true });
    expect(problems).to.deep.equal([]);
    expect(requests).to.deep.equal([url]);
  });

  it("the controller's live page at / renders with no console error, reloads itself and keeps the filter", async function () {
    await sb.write('live-a.yaml', sb.attempt('live-a', 'true'));
    await sb.write('live-b.yaml', sb.attempt('live-b', 'true'));
    const port = 20000 + ((process.pid + 4057) % 20000);
    const ctl = startController(sb, { metricsAddr: `127.0.0.1:${port}`, maxRunning: 2 });
    try {
      const url = `http://127.0.0.1:${port}/`;
      browser = await launchBrowser();
      const page = await browser.context.newPage();
      const problems: string[] = [];
      const requests: string[] = [];
      page.on('console', (m) => {
        if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`);
      });
      page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
      page.on('request', (r) => requests.push(r.url()));
      // Until the controller listens and has both attempts in memory.
      await waitFor(
        'the live page lists both attempts',
        async () => {
          const res = await page.goto(url).catch(() => null);
          return res?.status() === 200 && /^2 of 2 attempts/.test((await page.textContent('#shown')) ?? '');
        },
        { dirs: [path.join(sb.stateDir, sb.instance, 'attempts')] },
      );
      await page.fill('#filter', 'live-b');
      expect(await visibleNames(page)).to.deep.equal(['live-b']);
      // The page reloads itself (every 5 s) and keeps the filter.
      await page.waitForEvent('load', { timeout: 15_000 });
      await page.waitForFunction("/^1 of 2 attempts/.test(document.getElementById('shown').textContent)");
      expect(await page.inputValue('#filter')).to.equal('live-b');
      expect(await visibleNames(page)).to.deep.equal(['live-b']);
      expect(await page.isChecked('#auto')).to.equal(true);
      expect(problems).to.deep.equal([]);
      expect(new Set(requests)).to.deep.equal(new Set([url]));
    } finally {
      await browser?.close();
      browser = undefined;
      await ctl.stop();
    }
  });
});
