/** The rule behind BERTH_* and berth.yaml's keys: one per flag, derived from the flag's name, for every command. */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { buildProgram } from '../../../src/cli/index';
import { applyDefaults, envName } from '../../../src/cli/config';
import { bufferIo } from '../../../src/cli/io';

const SCHEMA = path.resolve(__dirname, '..', '..', '..', 'schemas', 'config.schema.json');

/** Flags that are not defaults but the request itself (what to do now), or that choose the file: kept out of berth.yaml on purpose. */
const NOT_IN_FILE = new Set([
  'config',
  'context',
  'once',
  'wait',
  'no-wait',
  'output',
  'selector',
  'sets',
  'watch',
  'follow',
  'run',
  'tail',
  'sidecar',
  'grade',
  'build',
  'for',
  'force',
  'keep-state',
  'move-instance',
  'detailed-exitcode',
  'no-headers',
  'allow-empty',
  'allow-weak-isolation',
  'all',
  'sort-by',
  'limit',
  'continue',
  'verbose',
  'by',
  'baseline',
  // berth exec and berth release: each call's own
  'workdir',
  'interactive',
  'tty',
  'exit-code',
]);

function commands(): Command[] {
  const program = buildProgram(bufferIo(), () => undefined);
  return [program, ...program.commands];
}

describe('berth.yaml keys and BERTH_* variables', function () {
  it('envName: --default-deadline is BERTH_DEFAULT_DEADLINE; the names berth had keep working', function () {
    expect(envName('--default-deadline')).to.equal('BERTH_DEFAULT_DEADLINE');
    expect(envName('--no-headers')).to.equal('BERTH_NO_HEADERS');
    for (const f of ['specs', 'state', 'instance', 'results-root', 'log-level', 'log-format', 'fail-on', 'backend']) {
      expect(envName(`--${f}`)).to.equal(`BERTH_${f.toUpperCase().replace(/-/g, '_')}`);
    }
  });

  it("a negated flag's variable is a switch: BERTH_NO_HEADERS=1 drops get's header, =0 keeps it (CONFIG.md's own example)", function () {
    const get = commands().find((c) => c.name() === 'get') as Command;
    for (const [raw, headers] of [
      ['1', false],
      ['true', false],
      ['0', true],
      ['no', true],
    ] as const) {
      get.setOptionValueWithSource('headers', true, 'default');
      applyDefaults(get, { BERTH_NO_HEADERS: raw });
      expect(get.opts().headers, raw).to.equal(headers);
    }
  });

  it('every option of every command takes its BERTH_* (parsed as the flag parses it)', function () {
    for (const cmd of commands()) {
      for (const opt of cmd.options) {
        if (!opt.long || opt.long === '--help' || opt.long === '--version') continue;
        const candidates = opt.isBoolean() || opt.negate ? ['true'] : [...(opt.argChoices ?? []), '30s', '2', '64Ki', '2Gi', 'a=b', 'json', 'x', '0.05'];
        const ok = candidates.some((v) => {
          const c = buildProgram(bufferIo(), () => undefined);
          const target = cmd.name() === 'berth' ? c : (c.commands.find((s) => s.name() === cmd.name()) as Command);
          try {
            applyDefaults(target, { [envName(opt.long as string)]: v });
          } catch {
            return false;
          }
          return target.getOptionValueSource(opt.attributeName()) === 'env';
        });
        expect(ok, `${cmd.name()} ${opt.long}`).to.equal(true);
      }
    }
  });

  it("berth.yaml's keys (schemas/config.schema.json) are flags, and every flag is one of them or kept out on purpose", function () {
    const schema = JSON.parse(readFileSync(SCHEMA, 'utf8')) as {
      properties: Record<string, unknown>;
      $defs: { flags: { properties: Record<string, unknown> } };
    };
    const keys = Object.keys(schema.$defs.flags.properties);
    expect(Object.keys(schema.properties).filter((k) => !keys.includes(k))).to.deep.equal(['current-context', 'contexts']);
    const flags = new Set(commands().flatMap((c) => c.options.map((o) => (o.long ?? '').slice(2))));
    flags.delete('help');
    flags.delete('version');
    expect(
      keys.filter((k) => !flags.has(k)),
      'keys that are no flag',
    ).to.deep.equal([]);
    expect([...flags].filter((f) => !keys.includes(f) && !NOT_IN_FILE.has(f)).sort(), 'flags neither in berth.yaml nor kept out on purpose').to.deep.equal([]);
  });
});
