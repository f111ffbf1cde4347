/**
 * A summary as JUnit XML for CI: one testsuite per set (and one, `attempts`, for the plain
 * Attempts), one testcase per child. Passed children
 * pass; task failures are <failure>; infrastructure outcomes are <error> (the run could not say);
 * skipped and unfinished children are <skipped>; a touched child (an exec or a copy made into its
 * run) carries a `berth.touched` property and says so in its <system-out>. Every string from a spec or a run is escaped, and
 * characters XML cannot hold are dropped.
 */
import type { ChildSummary, SetSummary, Summary } from './summary';

/** XML text or attribute value: markup escaped, characters XML 1.0 forbids removed. */
export function xmlEscape(s: string): string {
  return [...s]
    .filter((ch) => xmlChar(ch.codePointAt(0) as number))
    .join('')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}

/** XML 1.0's Char production. */
function xmlChar(c: number): boolean {
  return c === 0x9 || c === 0xa || c === 0xd || (c >= 0x20 && c <= 0xd7ff) || (c >= 0xe000 && c <= 0xfffd) || (c >= 0x10000 && c <= 0x10ffff);
}

const secs = (ms: number | null) => ((ms ?? 0) / 1000).toFixed(3);

function testcase(set: SetSummary, c: ChildSummary): string {
  const cell = set.axes.map((a) => `${a}=${c.coords[a] ?? ''}`).join(', ');
  const head = `    <testcase classname="${xmlEscape(set.name)}" name="${xmlEscape(cell ? `${c.name} (${cell})` : c.name)}" time="${secs(c.durationMs)}"`;
  // The message names the outcome as get's RESULT does (`failed (score 0)`), the text the run's phase and reason.
  const why = [c.outcome === 'infra' || c.outcome === 'skipped' ? c.reason : null, c.score !== null ? `score ${c.score}` : null].filter(
    (x) => x !== null && x !== '',
  );
  const message = `${c.outcome}${why.length ? ` (${why.join(', ')})` : ''}`;
  const run = `run ${c.phase}${c.reason ? ` (${c.reason})` : ''}`;
  // a run someone reached into (berth exec, berth cp, the API) says so: a property and a line of its output
  const t = c.touched;
  const props = t ? [`      <properties><property name="berth.touched" value="${t.execs} execs, ${t.copies} copies"/></properties>`] : [];
  const out = t
    ? [
        `      <system-out>TOUCHED: ${t.execs} execs and ${t.copies} copies were made into this run by hand (berth exec, berth cp or the API; its execs.jsonl says what): not a clean run</system-out>`,
      ]
    : [];
  // JUnit's order: properties, then the verdict, then the output
  const body = (verdict: string[]) => {
    const inner = [...props, ...verdict, ...out];
    return inner.length ? `${head}>\n${inner.join('\n')}\n    </testcase>` : `${head}/>`;
  };
  switch (c.outcome) {
    case 'passed':
      return body([]);
    case 'failed':
      return body([`      <failure message="${xmlEscape(message)}" type="TaskFailed">${xmlEscape(run)}</failure>`]);
    case 'infra':
      return body([`      <error message="${xmlEscape(message)}" type="${xmlEscape(c.reason ?? 'Infrastructure')}">${xmlEscape(run)}</error>`]);
    default:
      return body([`      <skipped message="${xmlEscape(c.outcome === 'skipped' ? message : 'not finished')}"/>`]);
  }
}

export function toJunit(s: Summary): string {
  const lines = ['<?xml version="1.0" encoding="UTF-8"?>'];
  // the plain Attempts (in no set) are a suite too, named `attempts`
  const suites = [...s.sets, ...(s.attempts ? [s.attempts] : [])];
  const total = suites.reduce((a, x) => ({ n: a.n + x.n, f: a.f + x.failed, e: a.e + x.infra, k: a.k + x.skipped + x.unfinished }), { n: 0, f: 0, e: 0, k: 0 });
  lines.push(`<testsuites name="berth" tests="${total.n}" failures="${total.f}" errors="${total.e}" skipped="${total.k}">`);
  for (const set of suites) {
    const time = set.children.reduce((a, c) => a + (c.durationMs ?? 0), 0);
    lines.push(
      `  <testsuite name="${xmlEscape(set.name)}" tests="${set.n}" failures="${set.failed}" errors="${set.infra}" skipped="${set.skipped + set.unfinished}" time="${secs(time)}" timestamp="${s.generatedAt}">`,
    );
    // a set held at its last good expansion (its file broken): said where CI shows a suite's properties
    const held = set.heldBy?.[0];
    if (held)
      lines.push(
        `    <properties>\n      <property name="berth.heldBy" value="${xmlEscape(`${held.file}:${held.line}:${held.col}: ${held.path ? `${held.path}: ` : ''}${held.message}`)}"/>\n    </properties>`,
      );
    for (const c of set.children) lines.push(testcase(set, c));
    lines.push('  </testsuite>');
  }
  lines.push('</testsuites>');
  return lines.join('\n') + '\n';
}
