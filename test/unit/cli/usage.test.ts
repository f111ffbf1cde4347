/** A mistake on the command line: two lines on stderr, exit 2; help on stdout (issue 38). */
import { expect } from 'chai';
import { run } from '../../../src/cli/index';
import { bufferIo } from '../../../src/cli/io';
import { EXIT } from '../../../src/constants';
import { usageError } from '../../../src/cli/usage';

async function berth(...args: string[]) {
  const io = bufferIo();
  const code = await run(['node', 'berth', ...args], io);
  return { code, stdout: io.stdout, stderr: io.stderr };
}

describe('command-line mistakes', () => {
  it('a typo of a command: the error with a did-you-mean, and where help is', async () => {
    expect(await berth('gte')).to.deep.equal({
      code: EXIT.usage,
      stdout: '',
      stderr: "berth: unknown command 'gte' (did you mean get?)\nsee 'berth --help'\n",
    });
  });

  it("a bad flag of a command points at that command's help", async () => {
    expect(await berth('wait', '--tiemout', '3')).to.deep.equal({
      code: EXIT.usage,
      stdout: '',
      stderr: "berth: unknown option '--tiemout' (did you mean --timeout?)\nsee 'berth wait --help'\n",
    });
    const bad = await berth('reconcile', '--once', '--wait', '--timeout', 'soon');
    expect(bad.code).to.equal(EXIT.usage);
    expect(bad.stderr.split('\n')).to.deep.equal([
      "berth: option '--timeout <duration>' argument 'soon' is invalid. --timeout must be a duration such as 500ms, 30s, 2m, 1h or 1h30m (a bare number is seconds)",
      "see 'berth reconcile --help'",
      '',
    ]);
  });

  it('a missing argument, a kind berth does not know', async () => {
    expect(await berth('describe')).to.deep.equal({
      code: EXIT.usage,
      stdout: '',
      stderr: 'berth: describe: name the attempts, select them with -l (e.g. -l suite=demo), or give --all\n',
    });
    const pod = await berth('--state', '/nonexistent-berth-state', 'rerun', 'pod/x');
    expect([pod.code, pod.stderr]).to.deep.equal([
      EXIT.usage,
      'berth: "pod/x": berth has no kind "pod": give an attempt name, attempt/NAME, or set/NAME (the attempts of an AttemptSet)\n',
    ]);
  });

  it('--timeout of reconcile goes with --once --wait: without them it is refused, not a controller started', async () => {
    const alone = await berth('reconcile', '--timeout', '30s');
    expect([alone.code, alone.stdout, alone.stderr]).to.deep.equal([
      EXIT.usage,
      '',
      'berth: --timeout goes with --once --wait (berth reconcile --once --wait --timeout 30m): a controller runs until it is stopped\n',
    ]);
    const once = await berth('reconcile', '--once', '--timeout', '30s');
    expect([once.code, once.stderr]).to.deep.equal([
      EXIT.usage,
      'berth: --timeout goes with --once --wait (berth reconcile --once --wait --timeout 30m): without --wait, --once does not wait\n',
    ]);
  });

  it('help goes to stdout, also that of berth given no command; subcommand help lists the global flags', async () => {
    const none = await berth();
    expect([none.code, none.stderr]).to.deep.equal([EXIT.ok, '']);
    expect(none.stdout).to.match(/^Usage: berth /);
    const sub = await berth('get', '--help');
    expect([sub.code, sub.stderr]).to.deep.equal([EXIT.ok, '']);
    expect(sub.stdout).to.match(/^Global Options:$/m);
    for (const flag of ['--state', '--instance', '--specs', '--engine-timeout']) expect(sub.stdout).to.match(new RegExp(`^ {2}${flag} `, 'm'));
  });

  it("commander's messages become one berth line", () => {
    expect(usageError("error: unknown command 'gte'\n(Did you mean get?)\n")).to.equal("berth: unknown command 'gte' (did you mean get?)\n");
    expect(usageError('error: too many arguments. Expected 0 arguments but got 1.\n')).to.equal('berth: too many arguments. Expected 0 arguments but got 1.\n');
  });
});
