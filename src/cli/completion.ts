/**
 * `berth completion bash|zsh|fish`: small static scripts that complete berth's commands and
 * flags (commander cannot generate them); attempt names come from `berth get -o name`.
 */
import type { Command } from 'commander';

interface Spec {
  commands: { name: string; about: string; flags: string[] }[];
  globals: string[];
  /** The global flags that take a value (`--instance X`): X is no command, and they are passed on to `berth get` for names. */
  valued: string[];
}

/** Commands and flags, read from the program itself (so the scripts never miss one). */
export function completionSpec(program: Command): Spec {
  const flags = (c: Command) => c.options.flatMap((o) => [o.short, o.long].filter((f): f is string => !!f));
  return {
    globals: [...flags(program), '--help'],
    valued: program.options.filter((o) => o.required || o.optional).flatMap((o) => [o.short, o.long].filter((f): f is string => !!f)),
    commands: program.commands.map((c) => ({ name: c.name(), about: c.description().replace(/'/g, ''), flags: [...flags(c), '--help'] })),
  };
}

const NAMED = ['get', 'describe', 'logs', 'wait', 'rerun', 'regrade', 'delete'];

export function bashCompletion(s: Spec): string {
  const cases = s.commands.map((c) => `    ${c.name}) opts="${c.flags.join(' ')}";;`).join('\n');
  // the words before the command: a global flag's value (`--instance X`) is no command, and the
  // global flags (with their values) go on to `berth get -o name`, so names come from that instance
  return `# berth bash completion: source <(berth completion bash)
_berth() {
  local cur cmd opts skip w
  local -a globals
  cur="\${COMP_WORDS[COMP_CWORD]}"
  cmd=""
  skip=""
  for w in "\${COMP_WORDS[@]:1:COMP_CWORD-1}"; do
    if [ -n "$skip" ]; then skip=""; globals+=("$w"); continue; fi
    case "$w" in
      ${s.valued.length ? `${s.valued.join('|')}) skip=1; [ -z "$cmd" ] && globals+=("$w");;` : ''}
      -*) [ -z "$cmd" ] && globals+=("$w");;
      *) [ -z "$cmd" ] && cmd="$w";;
    esac
    [ -n "$cmd" ] && break
  done
  if [ -z "$cmd" ]; then
    COMPREPLY=( $(compgen -W "${s.commands.map((c) => c.name).join(' ')} ${s.globals.join(' ')}" -- "$cur") )
    return
  fi
  case "$cmd" in
${cases}
  esac
  case "$cur" in
    -*) COMPREPLY=( $(compgen -W "$opts ${s.globals.join(' ')}" -- "$cur") );;
    *) case "$cmd" in
         ${NAMED.join('|')}) COMPREPLY=( $(compgen -W "$(berth "\${globals[@]}" get -o name 2>/dev/null | sed 's|^attempt/||')" -- "$cur") );;
         completion) COMPREPLY=( $(compgen -W "bash zsh fish" -- "$cur") );;
         *) COMPREPLY=( $(compgen -f -- "$cur") );;
       esac;;
  esac
}
complete -F _berth berth
`;
}

export function zshCompletion(s: Spec): string {
  const cmds = s.commands.map((c) => `    '${c.name}:${c.about}'`).join('\n');
  const cases = s.commands.map((c) => `    ${c.name}) _arguments '*:attempt:_berth_attempts' ${c.flags.map((f) => `'${f}[]'`).join(' ')} ;;`).join('\n');
  return `#compdef berth
# berth zsh completion: berth completion zsh > "\${fpath[1]}/_berth"
_berth_attempts() {
  local -a names
  names=(\${(f)"$(berth get -o name 2>/dev/null | sed 's|^attempt/||')"})
  _describe 'attempt' names
}
_berth() {
  local -a commands
  commands=(
${cmds}
  )
  local i=2 cmd=""
  while (( i < CURRENT )); do
    case "$words[i]" in
      ${s.valued.length ? `${s.valued.join('|')}) (( i += 2 )); continue;;` : ''}
      -*) (( i += 1 )); continue;;
      *) cmd="$words[i]"; break;;
    esac
  done
  if [[ -z "$cmd" ]]; then
    _describe 'command' commands
    return
  fi
  case "$cmd" in
${cases}
  esac
}
_berth "$@"
`;
}

export function fishCompletion(s: Spec): string {
  const lines = [`# berth fish completion: berth completion fish > ~/.config/fish/completions/berth.fish`, `complete -c berth -f`];
  for (const c of s.commands) lines.push(`complete -c berth -n '__fish_use_subcommand' -a ${c.name} -d '${c.about}'`);
  for (const c of s.commands) {
    for (const f of c.flags) {
      const opt = f.startsWith('--') ? `-l ${f.slice(2)}` : `-s ${f.slice(1)}`;
      lines.push(`complete -c berth -n '__fish_seen_subcommand_from ${c.name}' ${opt}`);
    }
  }
  for (const g of s.globals) if (g.startsWith('--')) lines.push(`complete -c berth -l ${g.slice(2)}${s.valued.includes(g) ? ' -r' : ''}`);
  lines.push(`complete -c berth -n '__fish_seen_subcommand_from ${NAMED.join(' ')}' -a '(berth get -o name 2>/dev/null | string replace attempt/ "")'`);
  lines.push(`complete -c berth -n '__fish_seen_subcommand_from completion' -a 'bash zsh fish'`);
  return lines.join('\n') + '\n';
}
