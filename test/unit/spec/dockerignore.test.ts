/** .dockerignore as Docker 20.10 reads and matches it (moby's fileutils.PatternMatcher), and berth's one refusal. */
import { expect } from 'chai';
import { goClean, isExcluded, parseDockerignore, type DockerIgnore } from '../../../src/spec/dockerignore';

function ig(text: string): DockerIgnore {
  const r = parseDockerignore(text);
  if (!r.ok) throw new Error(r.message);
  return r.ignore;
}

describe('spec/dockerignore', () => {
  it('cleans paths as Go does', () => {
    expect(goClean('a/')).to.equal('a');
    expect(goClean('./a/./b/../c')).to.equal('a/c');
    expect(goClean('')).to.equal('.');
    expect(goClean('/..')).to.equal('/');
    expect(goClean('../x')).to.equal('../x');
  });

  it('anchors a pattern at the context root (unlike gitignore)', () => {
    const i = ig('foo\n');
    expect(isExcluded(i, 'foo')).to.equal(true);
    expect(isExcluded(i, 'a/foo')).to.equal(false);
    // a matched folder excludes what is below it
    expect(isExcluded(i, 'foo/bar/baz')).to.equal(true);
  });

  it('treats a trailing slash as nothing and strips a leading one', () => {
    const i = ig('/build/\n');
    expect(isExcluded(i, 'build')).to.equal(true);
    expect(isExcluded(i, 'build/x')).to.equal(true);
  });

  it('matches * and ? within one component, ** across any number', () => {
    const i = ig('*.log\n**/*.tmp\ndocs/?.md\n');
    expect(isExcluded(i, 'a.log')).to.equal(true);
    expect(isExcluded(i, 'sub/a.log')).to.equal(false);
    expect(isExcluded(i, 'x.tmp')).to.equal(true);
    expect(isExcluded(i, 'a/b/c/x.tmp')).to.equal(true);
    expect(isExcluded(i, 'docs/a.md')).to.equal(true);
    expect(isExcluded(i, 'docs/ab.md')).to.equal(false);
  });

  it('lets the last match win, and re-includes inside an excluded folder (unlike gitignore)', () => {
    const i = ig('data\n!data/keep.txt\n# a comment\n  \n');
    expect(isExcluded(i, 'data/x')).to.equal(true);
    expect(isExcluded(i, 'data/keep.txt')).to.equal(false);
    expect(i.exclusions).to.equal(true);
    const j = ig('*.md\n!README.md\nREADME.md\n');
    expect(isExcluded(j, 'README.md')).to.equal(true);
  });

  it('escapes with a backslash and takes . and $ literally', () => {
    const i = ig('a\\*b\nx.y$\n');
    expect(isExcluded(i, 'a*b')).to.equal(true);
    expect(isExcluded(i, 'axb')).to.equal(false);
    expect(isExcluded(i, 'x.y$')).to.equal(true);
    expect(isExcluded(i, 'xzy$')).to.equal(false);
  });

  it('refuses a pattern that leads out of the context, naming its line', () => {
    const r = parseDockerignore('node_modules\n!../\n');
    expect(r.ok).to.equal(false);
    if (!r.ok) {
      expect(r.line).to.equal(2);
      expect(r.message).to.match(/line 2: "!\.\.\/" leads out of the build context/);
    }
    expect(parseDockerignore('a/../../etc\n').ok).to.equal(false);
    expect(parseDockerignore('!\n').ok).to.equal(false);
  });
});
