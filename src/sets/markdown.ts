/**
 * A summary as GitHub-flavoured Markdown, for `$GITHUB_STEP_SUMMARY` (`berth summary -o markdown
 * >> "$GITHUB_STEP_SUMMARY"`): one table of the suites (each set, and the plain Attempts), then
 * the attempts that did not pass, with their cell (a set child's coordinates), reason, score and
 * grade, and the touched ones (an exec or a copy made into the run). Every string from a spec or a run
 * is escaped so it cannot end a cell, open a link or inject HTML.
 */
import type { SetSummary, Summary } from './summary';

/** Text safe in a Markdown table cell: markup characters escaped, line breaks as spaces. */
export function mdEscape(s: string): string {
  return s
    .replace(/[\r\n]+/g, ' ')
    .replace(/[\\`*_[\]|<>~&]/g, (c) => `\\${c}`)
    .slice(0, 200);
}

const pct = (x: number | null) => (x === null ? '-' : `${(x * 100).toFixed(1)}%`);

/** At most this many attempts that did not pass are listed (the rest counted). */
const LISTED = 50;

export function toMarkdown(s: Summary): string {
  const suites: [string, SetSummary][] = [
    ...s.sets.map((x): [string, SetSummary] => [`set/${x.name}`, x]),
    ...(s.attempts ? [['attempts (in no set)', s.attempts] as [string, SetSummary]] : []),
  ];
  const out = ['## berth summary', ''];
  if (!suites.length) return `${out.join('\n')}No AttemptSets and no attempts.\n`;
  out.push('| suite | attempts | passed | failed | infrastructure | skipped | unfinished | pass rate |', '|---|---:|---:|---:|---:|---:|---:|---:|');
  for (const [name, x] of suites) {
    out.push(`| ${mdEscape(name)} | ${x.n} | ${x.passed} | ${x.failed} | ${x.infra} | ${x.skipped} | ${x.unfinished} | ${pct(x.passRate)} |`);
  }
  for (const [name, x] of suites) {
    const held = x.heldBy?.[0];
    if (held)
      out.push(
        '',
        `> ${mdEscape(name)} is held at its last good spec: its file is broken (${mdEscape(`${held.file}:${held.line}:${held.col}: ${held.message}`)}).`,
      );
  }
  const bad = suites.flatMap(([name, x]) => x.children.filter((c) => c.outcome === 'failed' || c.outcome === 'infra').map((c) => ({ suite: name, c })));
  if (bad.length) {
    out.push('', '### Not passed', '', '| attempt | suite | cell | result | phase | reason | score | grade |', '|---|---|---|---|---|---|---:|---|');
    for (const { suite, c } of bad.slice(0, LISTED)) {
      const cell = Object.entries(c.coords)
        .map(([k, v]) => `${k}=${v}`)
        .join(', ');
      out.push(
        `| ${mdEscape(c.name)} | ${mdEscape(suite)} | ${mdEscape(cell)} | ${c.outcome} | ${mdEscape(c.phase)} | ${mdEscape(c.reason ?? '')} | ${c.score === null ? '' : c.score} | ${c.grade ? mdEscape(`grade-${c.grade.k}: ${c.grade.state === 'graded' ? (c.grade.passed ? 'pass' : 'fail') : (c.grade.reason ?? c.grade.state)}`) : ''} |`,
      );
    }
    if (bad.length > LISTED) out.push('', `… and ${bad.length - LISTED} more (\`berth summary -o json\`).`);
  }
  // runs someone reached into (berth exec, berth cp, the API): never to be taken for clean ones
  const touched = suites.flatMap(([name, x]) => x.children.filter((c) => c.touched).map((c) => ({ suite: name, c })));
  if (touched.length) {
    out.push(
      '',
      '### Touched by hand',
      '',
      "Execs or copies were made into these runs (berth exec, berth cp or the API; each run's execs.jsonl says what): their results are not those of a clean run.",
      '',
      '| attempt | suite | result | execs | copies |',
      '|---|---|---|---:|---:|',
    );
    for (const { suite, c } of touched.slice(0, LISTED))
      out.push(`| ${mdEscape(c.name)} | ${mdEscape(suite)} | ${c.outcome} | ${c.touched?.execs ?? 0} | ${c.touched?.copies ?? 0} |`);
    if (touched.length > LISTED) out.push('', `… and ${touched.length - LISTED} more (\`berth summary -o json\`).`);
  }
  return `${out.join('\n')}\n`;
}
