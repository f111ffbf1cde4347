#!/usr/bin/env bash
# Make sure the system `git` is there (specs from git, and its tests: git daemon, git
# http-backend, ssh-keygen for signed commits). Idempotent: changes nothing when git answers;
# otherwise installs Debian's git and openssh-client (root only).
set -euo pipefail

say() { printf 'git: %s\n' "$*" >&2; }

need_pkgs=()
command -v git >/dev/null 2>&1 || need_pkgs+=(git)
command -v ssh-keygen >/dev/null 2>&1 || need_pkgs+=(openssh-client)
if [ ${#need_pkgs[@]} -eq 0 ]; then
  say "$(git --version); using it"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  say "need ${need_pkgs[*]} but not root; install them (Debian: apt-get install ${need_pkgs[*]})"; exit 1
fi
say "installing ${need_pkgs[*]} from Debian's packages"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null
say "$(git --version)"
