/** How a git source's ssh files and token reach git (pure: the command and the script). */
import { expect } from 'chai';
import { ASKPASS_SCRIPT, sshCommand, sshProblem } from '../../../src/git/credentials';
import { gitEnv, HARDENING, lastLines } from '../../../src/git/exec';

describe('git source: credentials and hardening', function () {
  it('ssh checks host keys strictly against the given known_hosts, reads no ssh config, never prompts', function () {
    const cmd = sshCommand({ sshKey: '/keys/id_ed25519', knownHosts: '/keys/known_hosts' });
    expect(cmd).to.equal(
      'ssh -F /dev/null -o BatchMode=yes -o StrictHostKeyChecking=yes -o PasswordAuthentication=no -o KbdInteractiveAuthentication=no -o UserKnownHostsFile=/keys/known_hosts -o GlobalKnownHostsFile=/dev/null -o IdentitiesOnly=yes -i /keys/id_ed25519',
    );
  });

  it('refuses ssh file paths a shell would read as more than a path', function () {
    for (const p of ['/a b', '/a;rm -rf x', '/a$(id)', "/a'b", 'relative', '/a`b`']) expect(sshProblem({ sshKey: p }), p).to.be.a('string');
    expect(sshProblem({ sshKey: '/home/u/.ssh/id_ed25519', knownHosts: '/etc/berth/known_hosts' })).to.equal(undefined);
  });

  it('the askpass script prints the token with shell builtins only (no token in any argv)', function () {
    const body = ASKPASS_SCRIPT.split('\n').filter((l) => !l.startsWith('#'));
    for (const l of body) expect(l, l).to.not.match(/\b(cat|echo|head|env)\b/);
    expect(ASKPASS_SCRIPT).to.include('read -r t < "$BERTH_GIT_TOKEN_FILE"');
  });

  it('git runs with an environment of its own: no caller variables, no prompts, schemes allowlisted, ext:: off', function () {
    const env = gitEnv({ home: '/state/git/i/home' });
    expect(Object.keys(env).sort()).to.deep.equal(
      [
        'GIT_ALLOW_PROTOCOL',
        'GIT_ASKPASS',
        'GIT_CONFIG_GLOBAL',
        'GIT_CONFIG_NOSYSTEM',
        'GIT_NO_REPLACE_OBJECTS',
        'GIT_PROTOCOL_FROM_USER',
        'GIT_SSH_COMMAND',
        'GIT_TERMINAL_PROMPT',
        'HOME',
        'LC_ALL',
        'PATH',
        'SSH_ASKPASS',
      ].sort(),
    );
    expect(env).to.include({
      GIT_TERMINAL_PROMPT: '0',
      GIT_ALLOW_PROTOCOL: 'https:http:ssh:git:file',
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_ASKPASS: '/bin/false',
    });
    expect(HARDENING.join(' ')).to.include('-c protocol.ext.allow=never');
    expect(HARDENING.join(' ')).to.include('-c core.hooksPath=/dev/null');
    expect(HARDENING.join(' ')).to.include('-c credential.helper=');
  });

  it("git's message keeps ssh's cause, not the lines git adds after every failed connection", function () {
    const said = [
      'root@127.0.0.1: Permission denied (publickey).',
      'fatal: Could not read from remote repository.',
      '',
      'Please make sure you have the correct access rights',
      'and the repository exists.',
      '',
    ].join('\n');
    expect(lastLines(said)).to.equal('root@127.0.0.1: Permission denied (publickey).');
    const banner = [
      '@@@@@@@@',
      '@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @',
      'Host key for [127.0.0.1]:2222 has changed and you have requested strict checking.',
      'Host key verification failed.',
      'fatal: Could not read from remote repository.',
    ].join('\n');
    expect(lastLines(banner)).to.equal('Host key for [127.0.0.1]:2222 has changed and you have requested strict checking.; Host key verification failed.');
  });
});
