#!/usr/bin/env bash
# Make sure the system `git` is there (specs from git, and its tests: git daemon, git
# http-backend, ssh-keygen for signed commits, and Debian's sshd for the ssh source's test,
# which starts its own sshd on 127.0.0.1 and ends it). Idempotent: changes nothing when all
# answer; otherwise installs Debian's git, openssh-client and openssh-server (root only), and
# starts no service (the ssh service the package would start is held back for the install).
set -euo pipefail

say() { printf 'git: %s\n' "$*" >&2; }

need_pkgs=()
command -v git >/dev/null 2>&1 || need_pkgs+=(git)
command -v ssh-keygen >/dev/null 2>&1 || need_pkgs+=(openssh-client)
[ -x /usr/sbin/sshd ] || need_pkgs+=(openssh-server)
if [ ${#need_pkgs[@]} -eq 0 ]; then
  say "$(git --version); $(ssh -V 2>&1 | cut -d, -f1); using them"
  exit 0
fi
say "installing ${need_pkgs[*]} from Debian's packages"
# the ssh service the package would start is held back, and the engine's containers are not restarted (lib/apt.sh)
. "$(dirname "$0")/lib/apt.sh"
apt_install "${need_pkgs[@]}"
[ -x /usr/sbin/sshd ] || { say "openssh-server was installed but /usr/sbin/sshd is missing"; exit 1; }
say "$(git --version); $(ssh -V 2>&1 | cut -d, -f1)"
