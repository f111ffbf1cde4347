#!/usr/bin/env bash
# The newer Docker engines of the compatibility matrix (test/support/engine-matrix.ts): a root of
# each Debian suite named below, made by debootstrap with that suite's docker.io (and its
# containerd, runc, iptables), from Debian's own mirror. The tests run each root's dockerd as a
# private engine (test/support/private-engine.ts: its own network namespace, mount namespace,
# data root, exec root and socket); the machine's engine is never touched.
#
# The roots are a cache kept between runs, like node_modules: $BERTH_ENGINES_DIR (default
# /var/cache/berth/engines), one folder per suite, made once and reused while its stamp file
# (.berth-ready, the docker.io version it holds) is there. Nothing is downloaded by the tests.
# Idempotent; concurrent runs wait for each other (flock). Root only (debootstrap needs it).
#   BERTH_ENGINE_SUITES   which suites (default: trixie forky)
#   BERTH_DEBIAN_MIRROR   the mirror (default: the one this machine's apt uses, else deb.debian.org)
set -euo pipefail

say() { printf 'engines: %s\n' "$*" >&2; }

DIR=${BERTH_ENGINES_DIR:-/var/cache/berth/engines}
SUITES=${BERTH_ENGINE_SUITES:-trixie forky}

ready() { [ -f "$DIR/$1/.berth-ready" ]; }
all_ready() {
  local s
  for s in $SUITES; do ready "$s" || return 1; done
}

if all_ready; then
  for s in $SUITES; do say "$s: docker.io $(cat "$DIR/$s/.berth-ready") in $DIR/$s; using it"; done
  exit 0
fi
[ "$(id -u)" = 0 ] || { say "the engine roots are missing and this is not root (debootstrap needs it): run make setup as root"; exit 1; }

if ! command -v debootstrap >/dev/null 2>&1; then
  say "installing debootstrap from Debian's packages"
  . "$(dirname "$0")/lib/apt.sh"
  apt_install debootstrap
fi

mirror=${BERTH_DEBIAN_MIRROR:-}
if [ -z "$mirror" ]; then
  mirror=$(grep -hoE '^URIs: *http[^ ]*/debian/?$' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1 | sed -E 's/^URIs: *//' || true)
  mirror=${mirror:-http://deb.debian.org/debian}
fi

mkdir -p "$DIR"
exec 9>"$DIR/.lock"
flock 9
for s in $SUITES; do
  if ready "$s"; then
    say "$s: docker.io $(cat "$DIR/$s/.berth-ready") in $DIR/$s; using it"
    continue
  fi
  tmp="$DIR/.$s.tmp"
  rm -rf "$tmp" "$DIR/$s"
  # A suite this debootstrap does not know yet (forky on bookworm's) is made by sid's script, as Debian's own are.
  script=/usr/share/debootstrap/scripts/$s
  [ -e "$script" ] || script=/usr/share/debootstrap/scripts/sid
  say "$s: debootstrap with docker.io from $mirror into $DIR/$s (about a minute)"
  if ! debootstrap --variant=minbase --include=docker.io "$s" "$tmp" "$mirror" "$script" >"$DIR/.$s.log" 2>&1; then
    say "$s: debootstrap failed; the end of its log:"
    tail -n 20 "$DIR/.$s.log" >&2
    exit 1
  fi
  # no package cache kept in the root (about 100 MB)
  rm -rf "$tmp/var/cache/apt/archives/"*.deb
  version=$(chroot "$tmp" dpkg-query -W -f '${Version}' docker.io)
  [ -x "$tmp/usr/sbin/dockerd" ] || { say "$s: docker.io $version installed, but no /usr/sbin/dockerd in it"; exit 1; }
  printf '%s\n' "$version" >"$tmp/.berth-ready"
  mv "$tmp" "$DIR/$s"
  rm -f "$DIR/.$s.log"
  say "$s: docker.io $version in $DIR/$s"
done
