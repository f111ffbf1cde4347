#!/usr/bin/env bash
# The newer Docker engines of the compatibility matrix (test/support/engine-matrix.ts): a root of
# each Debian suite named below, made by debootstrap with that suite's docker.io (and its
# containerd and runc), from Debian's own mirror. The tests run each root's dockerd as a private
# engine (test/support/private-engine.ts: its own network namespace, data root, exec root and
# socket); the machine's engine is never touched. The engine's programs run on this host as they
# are, from <root>/.berth/bin (first on the PATH the engine is started with): dockerd, containerd,
# its shim and docker-proxy need no newer C library than bookworm's; runc does, so its copy there
# is made (patchelf) to load the suite's own loader and libraries.
#
# The roots are a cache kept between runs, like node_modules: $BERTH_ENGINES_DIR (default
# /var/cache/berth/engines), one folder per suite, made once and reused while its stamp file
# (.berth-ready, the docker.io version it holds) and its .berth/bin are there. Nothing is
# downloaded by the tests.
# Idempotent; concurrent runs wait for each other (flock). Root only (debootstrap needs it).
#   BERTH_ENGINE_SUITES   which suites (default: trixie forky)
#   BERTH_DEBIAN_MIRROR   the mirror (default: the one this machine's apt uses, else deb.debian.org)
set -euo pipefail

say() { printf 'engines: %s\n' "$*" >&2; }

DIR=${BERTH_ENGINES_DIR:-/var/cache/berth/engines}
SUITES=${BERTH_ENGINE_SUITES:-trixie forky}

ready() { [ -f "$DIR/$1/.berth-ready" ] && [ -x "$DIR/$1/.berth/bin/runc" ]; }
all_ready() {
  local s
  for s in $SUITES; do ready "$s" || return 1; done
}

if all_ready; then
  for s in $SUITES; do say "$s: docker.io $(cat "$DIR/$s/.berth-ready") in $DIR/$s; using it"; done
  exit 0
fi
[ "$(id -u)" = 0 ] || { say "the engine roots are missing and this is not root (debootstrap needs it): run make setup as root"; exit 1; }

need=()
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
command -v patchelf >/dev/null 2>&1 || need+=(patchelf)
if [ "${#need[@]}" -gt 0 ]; then
  say "installing ${need[*]} from Debian's packages"
  . "$(dirname "$0")/lib/apt.sh"
  apt_install "${need[@]}"
fi

# <root>/.berth/bin: the engine's programs, as the private engine's PATH finds them first.
make_bin() {
  local root=$1 bin=$1/.berth/bin x
  rm -rf "$bin"
  mkdir -p "$bin"
  for x in usr/sbin/dockerd usr/bin/containerd usr/bin/containerd-shim-runc-v2 usr/sbin/docker-proxy usr/bin/docker-init; do
    [ -e "$root/$x" ] || { say "$root has no /$x"; return 1; }
    ln -s "$root/$x" "$bin/$(basename "$x")"
  done
  cp "$root/usr/sbin/runc" "$bin/runc.tmp"
  patchelf --set-interpreter "$root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" --force-rpath \
    --set-rpath "$root/usr/lib/x86_64-linux-gnu" "$bin/runc.tmp"
  "$bin/runc.tmp" --version >/dev/null || { say "$root: its runc does not run here"; return 1; }
  "$bin/dockerd" --version >/dev/null || { say "$root: its dockerd does not run here"; return 1; }
  mv "$bin/runc.tmp" "$bin/runc"
}

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
  if [ -f "$DIR/$s/.berth-ready" ]; then
    make_bin "$DIR/$s"
    say "$s: docker.io $(cat "$DIR/$s/.berth-ready") in $DIR/$s; its programs in $DIR/$s/.berth/bin"
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
  make_bin "$DIR/$s"
  rm -f "$DIR/.$s.log"
  say "$s: docker.io $version in $DIR/$s"
done
