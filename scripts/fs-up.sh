#!/usr/bin/env bash
# Make sure mkfs.xfs and mkfs.btrfs are there (Debian's xfsprogs and btrfs-progs): the disk-limit
# tests make an xfs and a btrfs file system on loop devices for private engines' data roots
# (test/engine/disk-xfs.test.ts, disk-btrfs.test.ts) and tear them down. Idempotent: changes
# nothing when both answer; otherwise installs what is missing (root only), starting no service.
set -euo pipefail

say() { printf 'fs: %s\n' "$*" >&2; }

missing=()
command -v mkfs.xfs >/dev/null 2>&1 || missing+=(xfsprogs)
command -v mkfs.btrfs >/dev/null 2>&1 || missing+=(btrfs-progs)
if [ "${#missing[@]}" = 0 ]; then
  say "$(mkfs.xfs -V 2>&1 | head -1), $(mkfs.btrfs --version 2>&1 | head -1); using them"
  exit 0
fi
say "installing ${missing[*]} from Debian's packages"
. "$(dirname "$0")/lib/apt.sh"
apt_install "${missing[@]}"
for t in mkfs.xfs mkfs.btrfs; do
  command -v "$t" >/dev/null 2>&1 || { say "${missing[*]} installed but $t is missing"; exit 1; }
done
say "$(mkfs.xfs -V 2>&1 | head -1), $(mkfs.btrfs --version 2>&1 | head -1)"
