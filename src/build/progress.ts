/**
 * A build's output as the classic builder prints it, followed line by line (pure): the step under
 * way (`Step 3/5 : RUN make`) and so the Dockerfile line of its instruction, the container a step
 * runs in (` ---> Running in <id>`: what the disk limit measures), the images the build committed
 * itself (not a cache hit, not a FROM: removed if the build fails, so nothing of it stays), and
 * the last lines of output (quoted by BuildFailed). Then the failure's words: the Dockerfile line
 * of the failing instruction and its last output lines.
 */
import { DEFAULTS } from '../constants';
import type { Instruction } from '../spec/dockerfile';

/** ANSI colour codes (the builder wraps a step's stderr in red). */
// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;]*m/g;
const STEP = /^Step (\d+)\/(\d+) : (.*)$/;
const RUNNING_IN = /^ ---> Running in ([0-9a-f]{12,64})$/;
const IMAGE = /^ ---> ([0-9a-f]{12,64})$/;
const CACHED = /^ ---> Using cache$/;
/** A quoted line is cut to this many characters. */
const LINE_CHARS = 300;

export class BuildProgress {
  /** The step under way (1-based), and of how many. */
  step: { n: number; of: number; text: string } | undefined;
  /** The container the step under way runs in (short id as printed), until it is removed. */
  container: string | undefined;
  /** Images this build committed (short ids), oldest first. */
  readonly committed: string[] = [];
  private cached = false;
  private partial = '';
  private readonly tail: string[] = [];

  constructor(
    /** The build's steps (spec/dockerfile.ts buildSteps): what a step number names. */
    private readonly steps: readonly (Instruction | undefined)[],
  ) {}

  /** Takes a piece of the output (`stream` of a message); returns its text without colour codes, as the log keeps it. */
  take(text: string): string {
    const clean = text.replace(ANSI, '');
    const lines = (this.partial + clean).split('\n');
    this.partial = lines.pop() ?? '';
    for (const l of lines) this.line(l.replace(/\r$/, ''));
    return clean;
  }

  private line(l: string): void {
    const step = STEP.exec(l);
    if (step) {
      this.step = { n: Number(step[1]), of: Number(step[2]), text: step[3] as string };
      this.container = undefined;
      this.cached = false;
      this.tail.length = 0;
      return;
    }
    const running = RUNNING_IN.exec(l);
    if (running) {
      this.container = running[1];
      return;
    }
    if (CACHED.test(l)) {
      this.cached = true;
      return;
    }
    const image = IMAGE.exec(l);
    if (image) {
      // a step's new image: its own commit unless the cache answered or it is a stage's base
      if (!this.cached && this.instruction()?.keyword !== 'FROM') this.committed.push(image[1] as string);
      this.container = undefined;
      return;
    }
    if (l.startsWith('Removing intermediate container ') || l.trim() === '') return;
    this.tail.push(l.length > LINE_CHARS ? `${l.slice(0, LINE_CHARS)}…` : l);
    if (this.tail.length > DEFAULTS.buildFailedLines) this.tail.shift();
  }

  /** The instruction of the step under way, where the Dockerfile names it (a label's step has none). */
  instruction(): Instruction | undefined {
    return this.step ? this.steps[this.step.n - 1] : undefined;
  }

  /** Where the build is, for the attempts' message: `3/5 RUN make` (the step's text, cut). */
  where(): string | undefined {
    if (!this.step) return undefined;
    const t = this.step.text.length > 60 ? `${this.step.text.slice(0, 60)}…` : this.step.text;
    return `${this.step.n}/${this.step.of} ${t}`;
  }

  /** The last lines of the step under way's output. */
  lastLines(): string[] {
    const rest = this.partial.trim() ? [this.partial] : [];
    return [...this.tail, ...rest].slice(-DEFAULTS.buildFailedLines);
  }

  /**
   * Why the build failed, in BuildFailed's words: `<Dockerfile> line N (<instruction>): <why>`
   * (the build's own label steps, or a failure before any step, say so), then its last output lines.
   */
  failure(dockerfile: string, why: string): string {
    const ins = this.instruction();
    const cut = (s: string) => (s.length > 120 ? `${s.slice(0, 120)}…` : s);
    const at = ins
      ? `${dockerfile} line ${ins.line} (${cut(`${ins.keyword} ${ins.args}`)}): `
      : this.step
        ? `step ${this.step.n}/${this.step.of} (${cut(this.step.text)}): `
        : '';
    const lines = this.lastLines();
    return `${at}${oneLine(why)}${lines.length ? `; last output: ${lines.join(' | ')}` : ''}`;
  }
}

function oneLine(s: string): string {
  const t = s.replace(/\s+/g, ' ').trim();
  return t.length > 1000 ? `${t.slice(0, 1000)}…` : t;
}
