/**
 * A Dockerfile read as far as berth needs it (pure): its instructions with the lines they start
 * on, in the order the engine's classic builder numbers its steps (`Step N/M`), so a failed
 * build names the Dockerfile line of the instruction that failed; the images its stages start
 * `FROM` (pulled by the registries' rules, kept by image GC); and the `ADD`s of a URL (fetched by
 * the engine on its own network: refused unless the build has one).
 *
 * As moby's parser: parser directives at the top (`# escape=`), comments, empty lines, a line
 * continued by the escape character (comments and empty lines inside a continuation skipped),
 * the instruction word case-insensitive. The classic builder numbers its steps as: each `ARG`
 * before the first `FROM`, then each stage's `FROM` and instructions, the stages after `target`
 * left out, and each of the build's labels one more step (`LABEL k=v`) at the end of the last stage built.
 */

export interface Instruction {
  /** Upper case (`RUN`). */
  keyword: string;
  /** The rest of the instruction, continuations joined (without the escape characters that joined them). */
  args: string;
  /** The line it starts on (1-based). */
  line: number;
  /** As the builder prints it after `Step N/M : ` (the keyword as written, then the rest). */
  text: string;
}

export interface Stage {
  from: Instruction;
  /** The image reference as written (`${VAR}` unexpanded). */
  image: string;
  /** `AS name`, lower case. */
  name?: string;
  /** `--platform=VALUE` as written (`${VAR}` unexpanded). */
  platform?: string;
  commands: Instruction[];
}

export interface Dockerfile {
  /** `ARG`s before the first `FROM`. */
  metaArgs: Instruction[];
  stages: Stage[];
}

export type DockerfileRead = { ok: true; file: Dockerfile } | { ok: false; line: number; message: string };

const DIRECTIVE = /^#\s*([a-zA-Z][a-zA-Z0-9]*)\s*=\s*(.+?)\s*$/;

/** Parses `text`; the first problem the classic builder would also refuse (no FROM, an instruction before it). */
export function parseDockerfile(text: string): DockerfileRead {
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  let escape = '\\';
  let i = 0;
  // parser directives: only at the very top, before any comment, empty line or instruction
  for (; i < lines.length; i++) {
    const m = DIRECTIVE.exec(lines[i] as string);
    if (!m) break;
    if ((m[1] as string).toLowerCase() === 'escape') {
      const v = m[2] as string;
      if (v !== '\\' && v !== '`') return { ok: false, line: i + 1, message: `Dockerfile line ${i + 1}: escape must be \\ or \`, not ${JSON.stringify(v)}` };
      escape = v;
    }
  }
  const continued = (l: string): boolean => {
    const t = l.replace(/[ \t]+$/, '');
    return t.endsWith(escape);
  };
  const instructions: Instruction[] = [];
  while (i < lines.length) {
    const raw = lines[i] as string;
    const start = i + 1;
    i++;
    const t = raw.trim();
    if (t === '' || t.startsWith('#')) continue;
    let joined = raw.trimStart();
    while (continued(joined) && i <= lines.length) {
      joined = joined.replace(/[ \t]+$/, '').slice(0, -escape.length);
      // comment and empty lines inside a continuation are skipped
      while (i < lines.length && ((lines[i] as string).trim() === '' || (lines[i] as string).trim().startsWith('#'))) i++;
      if (i >= lines.length) break;
      joined += lines[i] as string;
      i++;
    }
    const m = /^(\S+)\s*([\s\S]*)$/.exec(joined.trim());
    if (!m) continue;
    const word = m[1] as string;
    const args = (m[2] as string).trim();
    instructions.push({ keyword: word.toUpperCase(), args, line: start, text: `${word} ${args}`.trim() });
  }
  const metaArgs: Instruction[] = [];
  const stages: Stage[] = [];
  for (const ins of instructions) {
    if (ins.keyword === 'FROM') {
      const words = ins.args.split(/\s+/).filter((w) => !w.startsWith('--'));
      const image = words[0] ?? '';
      if (!image) return { ok: false, line: ins.line, message: `Dockerfile line ${ins.line}: FROM names no image` };
      const as = words.length >= 3 && (words[1] as string).toLowerCase() === 'as' ? (words[2] as string).toLowerCase() : undefined;
      const platform = ins.args
        .split(/\s+/)
        .find((w) => w.toLowerCase().startsWith('--platform='))
        ?.slice('--platform='.length);
      stages.push({ from: ins, image, ...(as ? { name: as } : {}), ...(platform ? { platform } : {}), commands: [] });
      continue;
    }
    const stage = stages.at(-1);
    if (stage) stage.commands.push(ins);
    else if (ins.keyword === 'ARG') metaArgs.push(ins);
    else return { ok: false, line: ins.line, message: `Dockerfile line ${ins.line}: ${ins.keyword} comes before the first FROM` };
  }
  if (stages.length === 0) return { ok: false, line: 1, message: 'the Dockerfile has no FROM instruction' };
  return { ok: true, file: { metaArgs, stages } };
}

/** The stages built for `target` (all of them without one); undefined when no stage is named so. */
export function stagesFor(f: Dockerfile, target: string | null): Stage[] | undefined {
  if (target === null) return f.stages;
  const at = f.stages.findIndex((s) => s.name === target.toLowerCase());
  return at < 0 ? undefined : f.stages.slice(0, at + 1);
}

/**
 * The build's steps as the classic builder numbers them (1-based: `steps[n - 1]` is `Step n`):
 * each instruction with its line; the steps of the `labels` labels at the end have none (`undefined`).
 */
export function buildSteps(f: Dockerfile, target: string | null, labels: number): (Instruction | undefined)[] {
  const stages = stagesFor(f, target) ?? f.stages;
  const out: (Instruction | undefined)[] = [...f.metaArgs];
  for (const s of stages) out.push(s.from, ...s.commands);
  for (let i = 0; i < labels; i++) out.push(undefined);
  return out;
}

/** `$VAR`, `${VAR}`, `${VAR:-default}`, `${VAR:+alt}` in `word`, from `vars`; undefined when one is not set and has no default. */
export function expandArgs(word: string, vars: ReadonlyMap<string, string>): string | undefined {
  let unknown = false;
  const out = word.replace(
    /\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?:(:[-+])([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))/g,
    (_m, braced?: string, op?: string, alt?: string, bare?: string) => {
      const name = (braced ?? bare) as string;
      const v = vars.get(name);
      if (op === ':-') return v !== undefined && v !== '' ? v : (alt ?? '');
      if (op === ':+') return v !== undefined && v !== '' ? (alt ?? '') : '';
      if (v === undefined) unknown = true;
      return v ?? '';
    },
  );
  return unknown ? undefined : out;
}

/** The platform arguments the builder sets itself (the engine's own platform when the build's `args` do not give them). */
const PLATFORM_ARGS = ['BUILDPLATFORM', 'BUILDOS', 'BUILDARCH', 'BUILDVARIANT', 'TARGETPLATFORM', 'TARGETOS', 'TARGETARCH', 'TARGETVARIANT'];

/**
 * The images the build starts from: each stage's `FROM` that is not an earlier stage or
 * `scratch`, with the meta `ARG`s (their defaults, overridden by the build's `args`) expanded;
 * `unresolved` lists those that name a variable with no value (the engine resolves them).
 * `platforms`: the images a `FROM --platform=` names another platform for (its value expanded the
 * same way); one whose value is the builder's own (`$BUILDPLATFORM`, `$TARGETPLATFORM`...) or
 * cannot be expanded is the engine's platform, left out.
 */
export function baseImages(
  f: Dockerfile,
  target: string | null,
  args: Readonly<Record<string, string>>,
): { images: string[]; unresolved: string[]; platforms: Record<string, string> } {
  const vars = new Map<string, string>();
  // the builder's platform arguments are known in FROM without an ARG; given in args, they are these
  for (const p of PLATFORM_ARGS) if (args[p] !== undefined) vars.set(p, args[p]);
  for (const a of f.metaArgs) {
    const m = /^([A-Za-z_][A-Za-z0-9_]*)(?:=(.*))?$/.exec(a.args.trim());
    if (!m) continue;
    const name = m[1] as string;
    const given = args[name];
    if (given !== undefined) vars.set(name, given);
    else if (m[2] !== undefined) vars.set(name, unquote(m[2]));
  }
  const images: string[] = [];
  const unresolved: string[] = [];
  const platforms: Record<string, string> = {};
  const names = new Set<string>();
  for (const s of stagesFor(f, target) ?? f.stages) {
    const ref = expandArgs(s.image, vars);
    if (ref === undefined) unresolved.push(s.image);
    else if (!names.has(ref.toLowerCase()) && ref.toLowerCase() !== 'scratch') {
      if (!images.includes(ref)) images.push(ref);
      const own = s.platform !== undefined && PLATFORM_ARGS.some((p) => args[p] === undefined && new RegExp(`\\$\\{?${p}\\b`).test(s.platform as string));
      const platform = s.platform !== undefined && !own ? expandArgs(s.platform, vars) : undefined;
      if (platform && platforms[ref] === undefined) platforms[ref] = platform.toLowerCase();
    }
    if (s.name) names.add(s.name);
  }
  return { images, unresolved, platforms };
}

function unquote(v: string): string {
  const t = v.trim();
  return t.length >= 2 && (t[0] === '"' || t[0] === "'") && t.at(-1) === t[0] ? t.slice(1, -1) : t;
}

/** The `ADD`s of the stages built whose sources name a URL (`http://`, `https://`), with their lines. */
export function addedUrls(f: Dockerfile, target: string | null): { line: number; url: string }[] {
  const out: { line: number; url: string }[] = [];
  for (const s of stagesFor(f, target) ?? f.stages) {
    for (const c of s.commands) {
      if (c.keyword !== 'ADD') continue;
      for (const src of addSources(c.args)) if (/^https?:\/\//i.test(src)) out.push({ line: c.line, url: src });
    }
  }
  return out;
}

/** An ADD's sources: its words but flags and the destination (JSON form or plain). */
function addSources(args: string): string[] {
  const t = args.trim();
  let words: string[] | undefined;
  const flags: string[] = [];
  let rest = t;
  for (;;) {
    const m = /^(--\S+)\s+([\s\S]*)$/.exec(rest);
    if (!m) break;
    flags.push(m[1] as string);
    rest = m[2] as string;
  }
  if (rest.startsWith('[')) {
    try {
      const v = JSON.parse(rest) as unknown;
      if (Array.isArray(v) && v.every((x) => typeof x === 'string')) words = v as string[];
    } catch {
      // not JSON: the plain form
    }
  }
  words ??= rest.split(/\s+/).filter(Boolean);
  return words.slice(0, -1);
}
