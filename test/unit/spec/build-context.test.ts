/** spec.build as loaded: the context after .dockerignore, the build hash, the image it names, and hostile contexts. */
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { chmodSync, closeSync, ftruncateSync, mkdirSync, openSync, symlinkSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { BUILD, buildTag } from '../../../src/constants';
import { clearBuildFiles } from '../../../src/spec/build-context';
import { clearTreeDigests } from '../../../src/spec/fixture-scan';
import { cleanupTemp, sandbox } from './helpers';

const spec = (name: string, build: string, extra = '') => `apiVersion: berth.dev/v1
kind: Attempt
metadata:
  name: ${name}
spec:
  build:
${build}
${extra}`;

describe('spec/build-context', () => {
  afterEach(() => {
    cleanupTemp();
    clearBuildFiles();
    clearTreeDigests();
  });

  it('names the image by the build hash and keeps a spec without build as it was', async () => {
    const sb = sandbox({
      'a.yaml': spec('a', '    context: ./env\n    args: {V: "1"}'),
      'env/Dockerfile': 'FROM berth/busybox:local\nCOPY x /x\n',
      'env/x': 'one',
    });
    const l = await sb.load();
    expect(l.errors).to.deep.equal([]);
    const s = l.specs[0]!.spec;
    expect(s.build?.hash).to.match(/^[0-9a-f]{64}$/);
    expect(s.image).to.equal(`${BUILD.repository}/${s.build!.hash.slice(0, 16)}`);
    expect(s.image).to.equal(buildTag(s.build!.hash));
    expect(s.build?.from).to.deep.equal(['berth/busybox:local']);
    expect(s.build?.dockerfile).to.equal('Dockerfile');
    expect(s.build?.network).to.equal(false);
  });

  it('changes the hash with the context, args, target and network; not with what .dockerignore leaves out', async () => {
    const sb = sandbox({
      'a.yaml': spec('a', '    context: ./env'),
      'b.yaml': spec('b', '    context: ./env\n    args: {V: "2"}'),
      'c.yaml': spec('c', '    context: ./env', '  network: {mode: bridge}\n'),
      'env/Dockerfile': 'FROM berth/busybox:local AS one\nCOPY x /x\nFROM one AS two\n',
      'env/x': 'one',
      'env/.dockerignore': 'ignored\n*.log\n',
      'env/ignored/big': 'whatever',
      'env/a.log': 'log',
    });
    const hashes = async () => Object.fromEntries((await sb.load()).specs.map((s) => [s.spec.name, s.spec.build!.hash]));
    const first = await hashes();
    expect(new Set(Object.values(first)).size).to.equal(3);
    writeFileSync(path.join(sb.specs, 'env/ignored/big'), 'changed');
    writeFileSync(path.join(sb.specs, 'env/a.log'), 'more log');
    expect(await hashes()).to.deep.equal(first);
    writeFileSync(path.join(sb.specs, 'env/x'), 'two');
    const second = await hashes();
    expect(second.a).to.not.equal(first.a);
    // a mode counts
    chmodSync(path.join(sb.specs, 'env/x'), 0o600);
    expect((await hashes()).a).to.not.equal(second.a);
    writeFileSync(path.join(sb.specs, 'a.yaml'), spec('a', '    context: ./env\n    target: one'));
    expect((await hashes()).a).to.not.equal(second.a);
  });

  it('refuses image and build together, and neither', async () => {
    const both = await sandbox({ 'a.yaml': spec('a', '    context: ./env', '  image: x\n'), 'env/Dockerfile': 'FROM x\n' }).load();
    expect(both.errors.map((e) => `${e.path}: ${e.message}`)).to.deep.equal(['spec.build: image and build are exclusive: the image is either named or built']);
    const none = await sandbox({ 'a.yaml': 'apiVersion: berth.dev/v1\nkind: Attempt\nmetadata: {name: a}\nspec:\n  command: [sh]\n' }).load();
    expect(none.errors.map((e) => e.message)).to.deep.equal(['required field "image" is missing']);
  });

  it('refuses hostile contexts with the reason, at load', async () => {
    const sb = sandbox({
      'link.yaml': spec('link', '    context: ./link'),
      'link/Dockerfile': 'FROM x\n',
      'fifo.yaml': spec('fifo', '    context: ./fifo'),
      'fifo/Dockerfile': 'FROM x\n',
      'sparse.yaml': spec('sparse', '    context: ./sparse'),
      'sparse/Dockerfile': 'FROM x\n',
      'ign.yaml': spec('ign', '    context: ./ign'),
      'ign/Dockerfile': 'FROM x\n',
      'ign/.dockerignore': '*\n!../\n',
      'url.yaml': spec('url', '    context: ./url'),
      'url/Dockerfile': 'FROM x\nRUN true\nADD https://example.com/a /a\n',
      'urlok.yaml': spec('urlok', '    context: ./url', '  network: {mode: bridge}\n'),
      'out.yaml': spec('out', '    context: ./url\n    dockerfile: ../Dockerfile'),
      'tgt.yaml': spec('tgt', '    context: ./url\n    target: nope'),
      'none.yaml': spec('none', '    context: ./empty'),
      'empty/x': '',
    });
    symlinkSync('/etc/passwd', path.join(sb.specs, 'link', 'passwd'));
    execFileSync('mkfifo', [path.join(sb.specs, 'fifo', 'pipe')]);
    const fd = openSync(path.join(sb.specs, 'sparse', 'huge'), 'w');
    // 16 TiB less one block: ext4's largest file
    ftruncateSync(fd, 16 * 1024 ** 4 - 4096);
    closeSync(fd);
    mkdirSync(path.join(sb.root, 'outside'));
    const l = await sb.load();
    const by = Object.fromEntries(l.errors.map((e) => [e.attempt ?? e.file, `${e.code} ${e.path}: ${e.message}`]));
    expect(l.specs.map((s) => s.spec.name)).to.deep.equal(['urlok']);
    expect(by.link).to.match(/^fixture-link spec\.build\.context: build context link "passwd" points outside the build context/);
    expect(by.fifo).to.match(/^fixture-special spec\.build\.context: build context entry "pipe" is a fifo/);
    expect(by.sparse).to.match(/^too-large spec\.build\.context: build context file "huge" is 16(\.0)? TiB .*sparse/);
    expect(by.ign).to.match(/^build spec\.build\.context: .*\.dockerignore line 2: "!\.\.\/" leads out of the build context/);
    expect(by.url).to.match(/^build spec\.build\.context: Dockerfile line 3: ADD of a URL \(https:\/\/example\.com\/a\)/);
    expect(by.out).to.match(/^path-escape spec\.build\.context: dockerfile "\.\.\/Dockerfile" must lie inside the build context/);
    expect(by.tgt).to.match(/^build spec\.build\.context: target "nope" is not a stage of Dockerfile/);
    expect(by.none).to.match(/^missing-file spec\.build\.context: build context "\.\/empty" has no Dockerfile/);
  });

  it('claims its context: the YAML files in it are not specs', async () => {
    const sb = sandbox({
      'a.yaml': spec('a', '    context: ./env'),
      'env/Dockerfile': 'FROM x\n',
      'env/inner.yaml': spec('inner', '    context: .'),
    });
    const l = await sb.load();
    expect(l.errors).to.deep.equal([]);
    expect(l.specs.map((s) => s.spec.name)).to.deep.equal(['a']);
  });
});
