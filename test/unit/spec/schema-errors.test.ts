/** Schema errors: human messages, field paths and source positions (line:col) for ajv's findings. */
import { expect } from 'chai';
import type { SpecError } from '../../../src/spec/types';
import { cleanupTemp, doc, loadOne } from './helpers';

async function errorsOf(text: string): Promise<SpecError[]> {
  return (await loadOne(text)).errors;
}

function brief(e: SpecError | undefined): string {
  return e ? `${e.line}:${e.col} ${e.path} [${e.code}] ${e.message}` : 'none';
}

describe('spec/schema errors', () => {
  afterEach(cleanupTemp);

  it('points an unknown field at its key and suggests the closest known one', async () => {
    const errs = await errorsOf(doc('x', '  comand: [sh]\n  workingdir: /w\n'));
    expect(errs.map(brief)).to.deep.equal([
      '7:3 spec.comand [schema] unknown field "comand" (did you mean "command"?)',
      '8:3 spec.workingdir [schema] unknown field "workingdir" (did you mean "workingDir"?)',
    ]);
  });

  it('lists the known fields when nothing is close', async () => {
    const [e] = await errorsOf(doc('x', '  zzz: 1\n'));
    expect(e?.message).to.equal(
      'unknown field "zzz"; known fields: image, imagePullPolicy, build, command, workingDir, env, secrets, fixture, results, network, volumes, resources, deadlineSeconds, retries, user, workspace, harvest, sandbox, readOnlyRootFilesystem, ttlSecondsAfterFinished, sidecars, grade',
    );
  });

  it('reports a missing required field at the key of the mapping that lacks it', async () => {
    const errs = await errorsOf('apiVersion: berth.dev/v1\nkind: Attempt\nmetadata:\n  labels: {a: b}\nspec:\n  command: [sh]\n');
    expect(errs.map(brief)).to.deep.equal([
      '3:1 metadata.name [schema] required field "name" is missing',
      '5:1 spec.image [schema] required field "image" is missing',
    ]);
  });

  it('reports a missing top-level field at the start of the document', async () => {
    const errs = await errorsOf('# comment\n\napiVersion: berth.dev/v1\nkind: Attempt\nspec: {image: x}\n');
    expect(errs.map(brief)).to.deep.equal(['3:1 metadata [schema] required field "metadata" is missing']);
  });

  it('names the allowed values of an enum and suggests a near miss', async () => {
    const [e] = await errorsOf(doc('x', '  network: {mode: isolate}\n'));
    expect(brief(e)).to.equal('7:19 spec.network.mode [schema] must be one of none, isolated, bridge (got "isolate") (did you mean "isolated"?)');
  });

  it('tells users to quote numbers and booleans where strings are needed', async () => {
    const errs = await errorsOf(doc('x', '  env:\n    TASK_ID: 42\n    FLAG: false\n  command: [sleep, 1.5]\n'));
    expect(errs.map(brief)).to.deep.equal([
      '8:14 spec.env.TASK_ID [schema] must be a string or a mapping {secretRef: …} (got 42); quote it: "42"',
      '9:11 spec.env.FLAG [schema] must be a string or a mapping {secretRef: …} (got false); quote it: "false"',
      '10:20 spec.command[1] [schema] must be a string (got 1.5); quote it: "1.5"',
    ]);
  });

  it('explains that YAML 1.2 reads yes/no/on/off as strings', async () => {
    const [e] = await errorsOf(doc('x', '  volumes: [{name: c, mountPath: /c, readOnly: on}]\n'));
    expect(e?.message).to.equal('must be true or false (got "on"); YAML 1.2 reads on as a string, write true or false');
  });

  it('describes a wrong type in a oneOf once, not per branch', async () => {
    const errs = await errorsOf(doc('x', '  env:\n    A: [1]\n'));
    expect(errs.map(brief)).to.deep.equal(['8:8 spec.env.A [schema] must be a string or a mapping {secretRef: …} (got a list)']);
  });

  it("reports the matching oneOf branch's own errors for a mapping value", async () => {
    const errs = await errorsOf(doc('x', '  secrets: [{name: k, fromEnv: K}]\n  env:\n    A: {secretRef: "bad/name"}\n'));
    expect(errs.map(brief)).to.deep.equal([
      "9:20 spec.env.A.secretRef [schema] must be a secret name: letters, digits, '.', '_' or '-' (no '/', not '.' or '..') (got \"bad/name\")",
    ]);
  });

  it('points into flow mappings and lists precisely', async () => {
    const errs = await errorsOf(doc('x', '  resources: {cpus: 0, pids: 0.5}\n  volumes: [{name: a, mountPath: /a}, {name: B, mountPath: /b}]\n'));
    expect(errs.map(brief)).to.deep.equal([
      '7:21 spec.resources.cpus [schema] must be at least 0.01 (got 0)',
      '7:30 spec.resources.pids [schema] must be a whole number (got 0.5)',
      '8:46 spec.volumes[1].name [schema] must be a DNS-1123 label: lowercase letters, digits and \'-\', starting and ending with a letter or digit (got "B")',
    ]);
  });

  it('follows an alias to where the bad value is written', async () => {
    const text = `${doc('x', '  env: &e {A: 1}\n')}---\n${doc('y', '  env: *e\n')}`;
    const errs = await errorsOf(text);
    // Each document has its own anchors: in the second, *e refers to nothing, and a YAML error
    // makes the whole file unreadable (only YAML errors are reported for it).
    expect(errs.map(brief)).to.deep.equal(['15:8 spec.env [yaml-syntax] alias *e refers to no anchor defined before it']);
    const same = await errorsOf(doc('x', '  env: &e {A: 1}\n  volumes: [{name: v, mountPath: *e}]\n'));
    // mountPath: *e is reported where the aliased mapping is written.
    expect(same.map(brief)).to.deep.equal([
      '7:11 spec.volumes[0].mountPath [schema] must be a string (got a mapping)',
      '7:15 spec.env.A [schema] must be a string or a mapping {secretRef: …} (got 1); quote it: "1"',
    ]);
  });

  it('reports an error in an aliased value at the anchor it comes from', async () => {
    const text = `apiVersion: berth.dev/v1\nkind: Attempt\nmetadata: {name: x}\nspec:\n  image: x\n  command: &cmd [sh, 5]\n  env: {A: "1"}\n---\napiVersion: berth.dev/v1\nkind: Attempt\nmetadata: {name: y}\nspec:\n  image: x\n  command: [a]\n`;
    const errs = await errorsOf(text);
    expect(errs.map(brief)).to.deep.equal(['6:22 spec.command[1] [schema] must be a string (got 5); quote it: "5"']);
    const viaAlias = await errorsOf(`${doc('x', '  workingDir: &wd 7\n')}`.replace('  workingDir: &wd 7\n', '  env: {A: &n 7}\n  command: [*n]\n'));
    expect(viaAlias.map(brief)).to.deep.equal([
      '7:15 spec.env.A [schema] must be a string or a mapping {secretRef: …} (got 7); quote it: "7"',
      '7:15 spec.command[0] [schema] must be a string (got 7); quote it: "7"',
    ]);
  });

  it('reports a value-less key at the key', async () => {
    const [e] = await errorsOf(doc('x', '  workingDir:\n'));
    expect(brief(e)).to.equal('7:3 spec.workingDir [schema] must be a string (got nothing)');
  });

  it('quotes odd keys in paths', async () => {
    const [e] = await errorsOf(doc('x', '', '  labels: {"a.b/c": "x y"}\n'));
    expect(e?.path).to.equal('metadata.labels["a.b/c"]');
  });

  it('cuts long values in messages', async () => {
    const [e] = await errorsOf(doc('x', `  network: {mode: ${'z'.repeat(200)}}\n`));
    expect(e?.message).to.include('…');
    expect(e?.message.length).to.be.lessThan(120);
  });
});
