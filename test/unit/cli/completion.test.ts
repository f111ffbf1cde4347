/** Shell completion after a global flag's value (issue 54: it broke after `--instance X`). */
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { run } from '../../../src/cli/index';
import { bufferIo } from '../../../src/cli/io';

async function script(sh: string): Promise<string> {
  const io = bufferIo();
  expect(await run(['node', 'berth', 'completion', sh], io)).to.equal(0);
  return io.stdout;
}

describe('shell completion', function () {
  let dir: string;
  before(async function () {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-completion-'));
  });
  after(async function () {
    await fs.rm(dir, { recursive: true, force: true });
  });

  /** COMPREPLY for the words (the last one being completed), with `berth` a function that prints its arguments as names. */
  async function bash(...words: string[]): Promise<string[]> {
    const file = path.join(dir, 'berth.bash');
    await fs.writeFile(file, await script('bash'));
    const quoted = words.map((w) => `'${w}'`).join(' ');
    const out = execFileSync(
      'bash',
      [
        '-c',
        `source ${file}; berth() { printf 'attempt/%s\\n' "$@"; }; COMP_WORDS=(berth ${quoted}); COMP_CWORD=${words.length}; _berth; printf '%s\\n' "\${COMPREPLY[@]}"`,
      ],
      { encoding: 'utf8' },
    );
    return out.split('\n').filter(Boolean);
  }

  it('bash: a global flag and its value before the command are no command', async function () {
    expect(await bash('--instance', 'ci', 'ge')).to.deep.equal(['get']);
    expect(await bash('--instance', 'ci', 'get', '--no-h')).to.deep.equal(['--no-headers']);
    // a name is asked of the same instance: the global flags go on to `berth get -o name`
    expect(await bash('--instance', 'ci', 'describe', '')).to.deep.equal(['--instance', 'ci', 'get', '-o', 'name']);
    expect(await bash('describe', '')).to.deep.equal(['get', '-o', 'name']);
  });

  it('zsh and fish: a global flag that takes a value is skipped (zsh) or marked as taking one (fish)', async function () {
    expect(await script('zsh')).to.match(/--instance[|)].*\(\( i \+= 2 \)\)/);
    expect(await script('fish')).to.contain('complete -c berth -l instance -r');
  });
});
