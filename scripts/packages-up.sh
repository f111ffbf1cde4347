#!/usr/bin/env bash
# Every Debian package `make test` needs, in one apt run (one index update, one install) instead
# of one per setup script: on a fresh machine that is minutes of the test run. Each setup script
# (engine-up, git-up, fs-up, browser-up, registry-up, engines-up) still installs its own when run
# alone; after this they find them installed. Idempotent: only what is missing is installed.
set -euo pipefail
. "$(dirname "$0")/lib/apt.sh"

say() { printf 'packages: %s\n' "$*" >&2; }

# program or file that shows it installed -> package
wanted=(
  dockerd:docker.io
  /bin/busybox:busybox-static
  git:git
  ssh-keygen:openssh-client
  /usr/sbin/sshd:openssh-server
  mkfs.xfs:xfsprogs
  mkfs.btrfs:btrfs-progs
  chromium:chromium
  /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf:fonts-dejavu-core
  docker-registry:docker-registry
  skopeo:skopeo
  htpasswd:apache2-utils
  debootstrap:debootstrap
  patchelf:patchelf
  curl:curl
  python3:python3
)
missing=()
for w in "${wanted[@]}"; do
  what=${w%%:*} pkg=${w#*:}
  if [[ $what == /* ]]; then [ -e "$what" ] && continue; else command -v "$what" >/dev/null 2>&1 && continue; fi
  missing+=("$pkg")
done
if [ ${#missing[@]} -eq 0 ]; then
  say "all installed"
  exit 0
fi
say "installing ${missing[*]} from Debian's packages"
apt_install "${missing[@]}"
