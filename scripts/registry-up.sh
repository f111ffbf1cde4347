#!/usr/bin/env bash
# Make sure the registry tests' tools are there: Debian's docker-registry (distribution 2.8, the
# real registry each registry test starts on an address of its own, test/support/registry.ts),
# skopeo (pushes a test's images into it) and apache2-utils (htpasswd: the bcrypt entries the
# registry's auth reads). Idempotent: changes nothing when all answer; otherwise installs what is
# missing (root only). The registry service the package would start is held back (lib/apt.sh):
# no registry runs but those the tests start and stop.
set -euo pipefail

say() { printf 'registry: %s\n' "$*" >&2; }

missing=()
command -v docker-registry >/dev/null 2>&1 || missing+=(docker-registry)
command -v skopeo >/dev/null 2>&1 || missing+=(skopeo)
command -v htpasswd >/dev/null 2>&1 || missing+=(apache2-utils)
if [ "${#missing[@]}" = 0 ]; then
  say "$(docker-registry --version 2>&1 | head -1), $(skopeo --version 2>&1 | head -1); using them"
  exit 0
fi
say "installing ${missing[*]} from Debian's packages"
. "$(dirname "$0")/lib/apt.sh"
apt_install "${missing[@]}"
for t in docker-registry skopeo htpasswd; do
  command -v "$t" >/dev/null 2>&1 || { say "${missing[*]} installed but $t is missing"; exit 1; }
done
# the package's own service, if its install started one anyway, is not one of ours to leave running
say "$(docker-registry --version 2>&1 | head -1), $(skopeo --version 2>&1 | head -1)"
