/**
 * Start-up (issue 55): a command line that names its command builds that command alone. Building
 * all of berth's commands (their options, argument parsers, help texts) is a few milliseconds of
 * every run; `berth get` needs only get's. The command is told from argv as commander will read
 * it: the global options before it, with their values, then the first word. Anything this cannot
 * be sure of (help, `--`, a flag it does not know, a word that is no command) builds them all.
 */
import type { Command, Option } from 'commander';

/** Commands that read the whole program (completion lists every command's flags): built with all the others. */
const WHOLE = new Set(['completion']);

/** What commandWord reads of an option: commander's Option, or flagsOf's reading of its flags. */
export type FlagShape = Pick<Option, 'long' | 'short' | 'required' | 'optional'>;

/**
 * An option's flags in commander's syntax ('-V, --version', '--specs <dir>', '--x [v]') read as
 * commander reads them, for what commandWord needs: without building the Option (~0.1 ms each
 * on a cold start; the launcher asks before it runs the program).
 */
export function flagsOf(flags: string): FlagShape {
  const words = flags.split(/[ |,]+/).filter(Boolean);
  return {
    long: words.find((w) => w.startsWith('--')),
    short: words.find((w) => /^-[^-]/.test(w)),
    required: words.some((w) => w.startsWith('<')),
    optional: words.some((w) => w.startsWith('[')),
  };
}

/** The first operand of argv, read past the program's own options; undefined when that is not sure. */
export function commandWord(argv: readonly string[], globals: readonly FlagShape[]): string | undefined {
  for (let i = 2; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === '--' || a === '-') return undefined;
    if (!a.startsWith('-')) return WHOLE.has(a) ? undefined : a;
    if (a.startsWith('--') && a.includes('=')) {
      if (!globals.some((o) => o.long === a.slice(0, a.indexOf('=')) && (o.required || o.optional))) return undefined;
      continue;
    }
    const o = globals.find((x) => x.long === a || x.short === a);
    // -h, --help, -V and the like, a flag of the command's own, short flags run together
    if (!o || o.optional || o.long === '--version') return undefined;
    if (o.required) i++;
  }
  return undefined;
}

/** Stands for a command that is not built: every call on it does nothing and returns it. */
const SKIPPED: Command = new Proxy(
  {},
  {
    get: () =>
      function skipped() {
        return SKIPPED;
      },
  },
) as Command;

/**
 * Makes `program.command(name)` build only the command named `word` (others get SKIPPED); call
 * the returned function once the commands are registered: false when `word` was none of them (the
 * program must then be built in full). buildProgram runs only that command's definition
 * (its `define`), so that the others' options, parsers and texts are not even made; this is the
 * guard that a definition that registers another command anyway still gets it skipped.
 */
export function buildOnly(program: Command, word: string): () => boolean {
  const real = program.command.bind(program) as (nameAndArgs: string, ...rest: unknown[]) => Command;
  let built = false;
  const only = (nameAndArgs: string, ...rest: unknown[]): Command => {
    if (nameAndArgs.split(' ')[0] !== word) return SKIPPED;
    built = true;
    return real(nameAndArgs, ...rest);
  };
  Object.defineProperty(program, 'command', { value: only, configurable: true, writable: true });
  return () => {
    delete (program as unknown as { command?: unknown }).command;
    return built;
  };
}
