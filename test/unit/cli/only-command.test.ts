/** Start-up (issue 55): a command line that names its command builds that command alone (only-command.ts). */
import { expect } from 'chai';
import { Option } from 'commander';
import { buildProgram, commandOf, GLOBAL_FLAGS } from '../../../src/cli/index';
import { bufferIo } from '../../../src/cli/io';
import { commandWord, flagsOf } from '../../../src/cli/only-command';

const names = (argv: string[]) => buildProgram(bufferIo(), () => {}, undefined, { argv }).commands.map((c) => c.name());

describe('cli: only the command argv names is built (issue 55)', function () {
  it('reads the word past the global flags and their values', function () {
    const globals = buildProgram(bufferIo(), () => {}).options;
    const w = (...a: string[]) => commandWord(['node', 'berth', ...a], globals);
    expect(w('get', '-o', 'name')).to.equal('get');
    expect(w('--specs', 'get', '--state=/s', 'validate')).to.equal('validate');
    expect(w('--log-level', 'warn', '--instance', 'ci', 'summary')).to.equal('summary');
    // not sure: everything is built
    expect(w('--help', 'get')).to.equal(undefined);
    expect(w('-x', 'get')).to.equal(undefined);
    expect(w('--', 'get')).to.equal(undefined);
    expect(w('--version')).to.equal(undefined);
    expect(w('completion', 'bash')).to.equal(undefined);
    expect(w()).to.equal(undefined);
  });

  it('builds that command alone; a word that is no command, and no argv, build them all', function () {
    const all = names([]);
    expect(all.length).to.be.greaterThan(20);
    expect(names(['node', 'berth', '--instance', 'ci', 'get', '-o', 'name'])).to.deep.equal(['get']);
    expect(names(['node', 'berth', 'gte'])).to.deep.equal(all);
    expect(names(['node', 'berth', 'help', 'get'])).to.deep.equal(all);
    expect(buildProgram(bufferIo(), () => {}).commands.map((c) => c.name())).to.deep.equal(all);
  });

  it('the command built alone parses as it does among all the others', function () {
    const one = buildProgram(bufferIo(), () => {}, undefined, { argv: ['node', 'berth', 'get'] }).commands[0];
    const whole = buildProgram(bufferIo(), () => {}).commands.find((c) => c.name() === 'get');
    expect(one?.options.map((o) => o.flags)).to.deep.equal(whole?.options.map((o) => o.flags));
    expect(one?.registeredArguments.map((a) => a.name())).to.deep.equal(whole?.registeredArguments.map((a) => a.name()));
  });

  it("commandOf (the split build's file of one command runs only its own): the word the whole program reads", function () {
    const globals = buildProgram(bufferIo(), () => {}).options;
    for (const a of [
      ['get', '-o', 'name'],
      ['--specs', 'get', 'validate'],
      ['--log-level', 'warn', 'get'],
      ['--help', 'get'],
      ['--version'],
      ['completion'],
      [],
    ])
      expect(commandOf(['node', 'berth', ...a]), a.join(' ')).to.equal(commandWord(['node', 'berth', ...a], globals));
    expect(commandOf(['node', 'berth', '--specs', 'get', 'validate'])).to.equal('validate');
  });

  it("commandOf's table of the global flags is the program's, and flagsOf reads each as commander does", function () {
    const options = buildProgram(bufferIo(), () => {}).options;
    expect(GLOBAL_FLAGS).to.deep.equal(options.map((o) => o.flags));
    for (const o of options) expect(flagsOf(o.flags), o.flags).to.deep.equal({ long: o.long, short: o.short, required: o.required, optional: o.optional });
    for (const flags of ['-o, --output <format>', '--no-headers', '-w, --watch', '--tail [n]', '-l, --selector <selector>']) {
      const o = new Option(flags);
      expect(flagsOf(flags), flags).to.deep.equal({ long: o.long, short: o.short, required: o.required, optional: o.optional });
    }
  });
});
