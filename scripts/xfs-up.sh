#!/usr/bin/env bash
# Make sure mkfs.xfs is there (Debian's xfsprogs): the engine-enforced disk limit's test makes an
# xfs file system with project quotas on a loop device for a private engine's data root
# (test/engine/disk-xfs.test.ts), and tears it down. Idempotent: changes nothing when mkfs.xfs
# answers; otherwise installs xfsprogs (root only), starting no service.
set -euo pipefail

say() { printf 'xfs: %s\n' "$*" >&2; }

if command -v mkfs.xfs >/dev/null 2>&1; then
  say "$(mkfs.xfs -V 2>&1 | head -1); using it"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  say "need xfsprogs but not root; install it (Debian: apt-get install xfsprogs)"; exit 1
fi
say "installing xfsprogs from Debian's packages"
export DEBIAN_FRONTEND=noninteractive
export NEEDRESTART_SUSPEND=1
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy"
  chmod 755 "$policy"
  trap 'rm -f "$policy"' EXIT
fi
apt-get -o DPkg::Lock::Timeout=300 update -qq >/dev/null
apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends xfsprogs >/dev/null
command -v mkfs.xfs >/dev/null 2>&1 || { say "xfsprogs was installed but mkfs.xfs is missing"; exit 1; }
say "$(mkfs.xfs -V 2>&1 | head -1)"
