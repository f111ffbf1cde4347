/** Dockerfiles read as the classic builder numbers their steps; their FROM images and ADDed URLs. */
import { expect } from 'chai';
import { addedUrls, baseImages, buildSteps, parseDockerfile, type Dockerfile } from '../../../src/spec/dockerfile';

function parse(text: string): Dockerfile {
  const r = parseDockerfile(text);
  if (!r.ok) throw new Error(r.message);
  return r.file;
}

describe('spec/dockerfile', () => {
  const text = [
    '# escape=\\',
    'ARG BASE=berth/busybox:local',
    '',
    'FROM ${BASE} AS build',
    '# a comment',
    'RUN echo one \\',
    '  # inside a continuation',
    '    && echo two',
    'COPY . /src',
    'FROM scratch AS test',
    'COPY --from=build /src /src',
    'FROM build',
    'run exit 3',
  ].join('\n');

  it('numbers the steps as the classic builder does: meta ARGs, each stage, a step per label last', () => {
    const f = parse(text);
    const steps = buildSteps(f, null, 1);
    expect(steps.map((s) => s && `${s.keyword}@${s.line}`)).to.deep.equal([
      'ARG@2',
      'FROM@4',
      'RUN@6',
      'COPY@9',
      'FROM@10',
      'COPY@11',
      'FROM@12',
      'RUN@13',
      undefined,
    ]);
    expect(steps[2]?.args).to.equal('echo one     && echo two');
    // a target leaves out the stages after it
    expect(buildSteps(f, 'test', 0).map((s) => s?.line)).to.deep.equal([2, 4, 6, 9, 10, 11]);
  });

  it('names the base images, ARGs expanded, stages and scratch left out', () => {
    const f = parse(text);
    expect(baseImages(f, null, {})).to.deep.equal({ images: ['berth/busybox:local'], unresolved: [], platforms: {} });
    expect(baseImages(f, null, { BASE: 'alpine:3' }).images).to.deep.equal(['alpine:3']);
    expect(baseImages(parse('FROM $NOPE\n'), null, {})).to.deep.equal({ images: [], unresolved: ['$NOPE'], platforms: {} });
  });

  it("FROM --platform: a literal platform (or one from an ARG) is kept per image; the builder's own ($BUILDPLATFORM...) is left out", () => {
    const f = parse(
      'ARG BASE=reg.example:5000/base:1\nARG ARCH=linux/arm64\nFROM --platform=$BUILDPLATFORM golang:1 AS b\n' +
        'FROM --platform=${ARCH} $BASE AS c\nFROM --platform=linux/AMD64 alpine:3\nCOPY --from=b /x /x\nFROM b\nFROM scratch\n',
    );
    expect(baseImages(f, null, {})).to.deep.equal({
      images: ['golang:1', 'reg.example:5000/base:1', 'alpine:3'],
      unresolved: [],
      platforms: { 'reg.example:5000/base:1': 'linux/arm64', 'alpine:3': 'linux/amd64' },
    });
    // args override the meta ARG's default, and a given BUILDPLATFORM is a platform like any
    expect(baseImages(f, 'c', { ARCH: 'linux/s390x', BUILDPLATFORM: 'linux/ppc64le' }).platforms).to.deep.equal({
      'golang:1': 'linux/ppc64le',
      'reg.example:5000/base:1': 'linux/s390x',
    });
  });

  it('finds ADDs of a URL, plain and JSON', () => {
    const f = parse('FROM x\nADD a.txt /a\nADD --chown=1:1 https://example.com/f /f\nADD ["http://e.x/y", "/y"]\nCOPY http://no /z\n');
    expect(addedUrls(f, null)).to.deep.equal([
      { line: 3, url: 'https://example.com/f' },
      { line: 4, url: 'http://e.x/y' },
    ]);
  });

  it('refuses what the builder refuses: no FROM, an instruction before it', () => {
    expect(parseDockerfile('# nothing\n').ok).to.equal(false);
    const r = parseDockerfile('RUN x\nFROM y\n');
    expect(r.ok).to.equal(false);
    if (!r.ok) expect(r.line).to.equal(1);
  });
});
