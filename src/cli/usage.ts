/**
 * How berth answers a mistake on its command line: two lines on stderr, as kubectl's do, the
 * error (with commander's did-you-mean on the same line) and where help is; never the whole
 * help. Help itself goes to stdout, also the help `berth` alone prints. Exit code 2 (index.ts).
 */

/**
 * What commander writes to its error stream: the help of `berth` given no command, and a
 * mistake's lines. Kept until the parse ends, when it is known which of the two it was.
 */
/** A mistake in how berth was called (a flag, a name, a combination): exit 2 with its message (index.ts). */
export class UsageError extends Error {}

export class UsageOutput {
  private text = '';
  write(s: string): void {
    this.text += s;
  }
  /** What was written, once. */
  take(): string {
    const t = this.text;
    this.text = '';
    return t;
  }
}

/** Commander's `error: unknown option '--tiemout'\n(Did you mean --timeout?)` as one berth line. */
export function usageError(commander: string): string {
  const one = commander
    .trimEnd()
    .replace(/^error: /, '')
    .replace(/\n\(Did you mean (.*)\?\)$/, ' (did you mean $1?)');
  return `berth: ${one}\n`;
}

/** The second line of a mistake: where the help of the command (or of berth) is. */
export function seeHelp(command?: string): string {
  return `see 'berth ${command ? `${command} ` : ''}--help'`;
}
