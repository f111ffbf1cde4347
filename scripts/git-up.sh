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
if [ "$(id -u)" != 0 ]; then
  say "need ${need_pkgs[*]} but not root; install them (Debian: apt-get install ${need_pkgs[*]})"; exit 1
fi
say "installing ${need_pkgs[*]} from Debian's packages"
export DEBIAN_FRONTEND=noninteractive
# needrestart (where installed) restarts nothing either: the engine and its containers stay as they are.
export NEEDRESTART_SUSPEND=1
# No service starts during the install (Debian's policy-rc.d protocol: exit 101 = not allowed):
# a machine without one gets one for the install only.
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy"
  chmod 755 "$policy"
  trap 'rm -f "$policy"' EXIT
fi
# A shared apt lock (another setup installing at the same time) is waited for, not fought.
apt-get -o DPkg::Lock::Timeout=300 update -qq >/dev/null
apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null
[ -x /usr/sbin/sshd ] || { say "openssh-server was installed but /usr/sbin/sshd is missing"; exit 1; }
say "$(git --version); $(ssh -V 2>&1 | cut -d, -f1)"
