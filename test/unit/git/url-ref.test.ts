/** The checks a git source's URL, ref and path pass before git sees them (pure). */
import { expect } from 'chai';
import { gitPathProblem, normalGitPath, refProblem } from '../../../src/git/ref';
import { parseGitUrl } from '../../../src/git/url';

describe('git source: URL, ref and path checks', function () {
  it('accepts the allowed schemes and the scp form of ssh', function () {
    for (const u of [
      'https://example.com/a/b.git',
      'http://127.0.0.1:8080/r.git',
      'ssh://git@example.com/a.git',
      'git://127.0.0.1:9418/r.git',
      'file:///srv/repo.git',
      'git@example.com:a/b.git',
    ]) {
      const r = parseGitUrl(u);
      expect(r.ok, u).to.equal(true);
    }
    expect(parseGitUrl('git@example.com:a/b.git')).to.deep.include({
      ok: true,
      value: { url: 'git@example.com:a/b.git', scheme: 'ssh', display: 'git@example.com:a/b.git' },
    });
  });

  it('refuses transports that run commands, options, other schemes and bare paths', function () {
    const refused: [string, RegExp][] = [
      ['ext::sh', /"ext::" transport form is refused/],
      ['fd::17', /"fd::" transport form/],
      ['-uhelp', /starts with "-"/],
      ['--upload-pack=touch /tmp/x', /starts with "-"/],
      ['ftp://example.com/r.git', /scheme "ftp" is not allowed/],
      ['/srv/repo.git', /no scheme/],
      ['relative/repo', /no scheme/],
      ['https://example.com/a b', /space or a control character/],
      ['https://example.com/a\nb', /space or a control character/],
      ['file://host/srv/r.git', /names no host/],
      ['', /empty/],
    ];
    for (const [u, why] of refused) {
      const r = parseGitUrl(u);
      expect(r.ok, u).to.equal(false);
      if (!r.ok) expect(r.message, u).to.match(why);
    }
  });

  it('refuses credentials in a URL without repeating them', function () {
    for (const u of ['https://user:s3cr3t-token@example.com/r.git', 'https://s3cr3t-token@example.com/r.git', 'ssh://git:s3cr3t-token@example.com/r.git']) {
      const r = parseGitUrl(u);
      expect(r.ok, u).to.equal(false);
      if (!r.ok) expect(r.message).to.not.include('s3cr3t');
    }
  });

  it("checks refs by git's rules plus no option, force or refspec", function () {
    for (const ok of ['main', 'release/v1.2', 'refs/heads/main', 'v1.0.0', 'HEAD']) expect(refProblem(ok), ok).to.equal(undefined);
    for (const bad of [
      '',
      '-main',
      '--upload-pack=x',
      '+main',
      'a:b',
      'ma*n',
      'a..b',
      'a b',
      'a~1',
      'a^',
      'a?',
      'a[',
      'a\\b',
      'a@{1}',
      '@',
      '/a',
      'a/',
      'a//b',
      '.a',
      'a/.b',
      'a.lock',
      'a.',
      'x'.repeat(256),
    ]) {
      expect(refProblem(bad), JSON.stringify(bad)).to.be.a('string');
    }
  });

  it('keeps --git-path inside the repository', function () {
    for (const ok of ['specs', 'a/b', './specs', '']) expect(gitPathProblem(ok), ok).to.equal(undefined);
    for (const bad of ['/abs', '../up', 'a/../../b', '-x', 'a:b', 'a\\b']) expect(gitPathProblem(bad), bad).to.be.a('string');
    expect(normalGitPath('./specs//x/')).to.equal('specs/x');
    expect(normalGitPath('.')).to.equal('');
  });
});
