/**
 * A large fleet report in a real browser (Debian's chromium; issue 55): above
 * REPORT_LIMITS.detailed attempts the page holds them as compact columns (src/report/compact.ts),
 * its script draws the table a page at a time, the heatmap is drawn in bands and the timeline by
 * set. 30,000 synthetic finished attempts (the bench opens 100,000): the page opens with no
 * console error, pages, filters and sorts, its links are the run folders', and an axis value
 * `</script><img src=x onerror=alert(1)>` shows as text and runs nothing. No engine is used.
 */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { REPORT_LIMITS } from '../../src/constants';
import { buildReport } from '../../src/report/model';
import { renderReport } from '../../src/report/render';
import { summarize } from '../../src/sets/summary';
import { syntheticFleet } from '../../bench/workloads/report';
import { launchBrowser, testOutputDir, type Browser } from '../support/browser';

const XSS = '</script><img src=x onerror=alert(1)>';

describe('berth report of 30,000 attempts in a browser (chromium)', function () {
  this.timeout(180_000);
  let browser: Browser | undefined;
  let dir: string;
  let file: string;
  let names: string[];
  before(async function () {
    const f = syntheticFleet({ models: ['m-a', XSS, 'm-c'], tasks: 500, seeds: 20, finished: true });
    const now = Date.parse('2026-01-03T00:00:00Z');
    const s = summarize(f.sets, f.statuses, now);
    const children = [...f.sets.values()][0]?.children ?? [];
    names = children.map((c) => c.name);
    const d = buildReport({
      sets: s.sets,
      childLabels: new Map(children.map((c) => [c.name, c.loaded?.spec.labels ?? {}] as const)),
      plain: [],
      statuses: f.statuses,
      now,
      instance: 'large',
      maxRunning: 16,
      resultsRoot: '/bench/results-root',
      linkBase: '/bench/results-root',
      mode: 'file',
    });
    expect(d.attempts.length).to.be.above(REPORT_LIMITS.detailed);
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-report-large-'));
    file = path.join(dir, 'report.html');
    await fs.writeFile(file, renderReport(d));
  });
  after(async function () {
    await browser?.close();
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('opens with the heatmap drawn in bands, and shows the table a page at a time: paging, filter, sort, links', async function () {
    const html = await fs.readFile(file, 'utf8');
    // one compact copy of the attempts: no row of them in the HTML itself, and no script from a value
    expect(html.length).to.be.below(4 * 1024 * 1024);
    expect(html).to.not.include('<img src=x');
    browser = await launchBrowser();
    const page = await browser.context.newPage();
    const errors: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    page.on('pageerror', (e) => errors.push(e.message));
    const requests: string[] = [];
    page.on('request', (r) => requests.push(r.url()));
    await page.goto(pathToFileURL(file).href, { waitUntil: 'load' });
    expect(await page.textContent('#shown')).to.equal('30000 of 30000 attempts · page 1 of 300');
    // 3 models × 500 tasks: the columns in bands of 5 (REPORT_LIMITS.heatCols 100), each a sum with its title
    expect(await page.$$eval('table.heat td.b', (tds) => tds.length)).to.equal(300);
    expect(await page.$eval('table.heat td.b', (td) => td.getAttribute('title'))).to.match(/^m-a × .+ … .+ \(5\): passed \d+, failed \d+/);
    const firstNames = () => page.$$eval('#tbl tbody tr td:first-child', (tds) => tds.map((td) => td.textContent));
    const p1 = await firstNames();
    expect(p1).to.deep.equal(names.slice(0, 100));
    await page.click('#next');
    expect(await firstNames()).to.deep.equal(names.slice(100, 200));
    expect(await page.textContent('#shown')).to.equal('30000 of 30000 attempts · page 2 of 300');
    await page.click('#prev');
    expect(await firstNames()).to.deep.equal(p1);
    // a filter finds one attempt among all the pages
    const last = names[names.length - 1] as string;
    await page.fill('#filter', last);
    expect(await firstNames()).to.deep.equal([last]);
    expect(await page.textContent('#shown')).to.equal('1 of 30000 attempts');
    expect(await page.$$eval('#tbl tbody tr:first-child td.lk a', (as) => as.map((a) => a.getAttribute('href')))).to.deep.equal([
      `swe/${last}/run-1/results/`,
      `swe/${last}/run-1/logs.txt`,
      `swe/${last}/run-1/manifest.json`,
    ]);
    // the axis value that is markup is text in the table, and no element of it exists
    await page.fill('#filter', 'onerror');
    expect(await page.textContent('#shown')).to.equal('10000 of 30000 attempts · page 1 of 100');
    expect(await page.$eval('#tbl tbody tr td:nth-child(3)', (td) => td.textContent)).to.include(XSS);
    expect(await page.$$('img')).to.have.length(0);
    await page.click('#clear');
    // sorted by duration, longest first after a second click
    await page.click('#tbl th[data-k="durationMs"]');
    await page.click('#tbl th[data-k="durationMs"]');
    const secs = await page.$$eval('#tbl tbody tr td:nth-child(9)', (tds) => tds.map((td) => parseFloat(td.textContent ?? '')));
    expect(secs).to.deep.equal([...secs].sort((a, b) => b - a));
    expect(secs[0]).to.be.above(190);
    await fs.mkdir(testOutputDir('report-large'), { recursive: true });
    await page.screenshot({ path: path.join(testOutputDir('report-large'), 'report.png') });
    expect(errors).to.deep.equal([]);
    expect(requests.filter((u) => u !== pathToFileURL(file).href)).to.deep.equal([]);
  });
});
