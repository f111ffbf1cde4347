#!/usr/bin/env bash
# What `make bench` needs besides berth itself, installed when missing. Idempotent:
#   - a Docker engine that answers            (./scripts/engine-up.sh)
#   - the local images, berth/busybox:local    (./scripts/images.sh)
#   - docker-compose 1.29 (Debian's `docker-compose` package, a peer the bench compares with)
#   - GNU time (/usr/bin/time: the hundredk workload's peak RSS of each command)
#   - berth built (dist/cli/index.js), since the bench runs `node bin/berth.js`
# Fails loudly (non-zero exit, with the reason on stderr) when any of them cannot be had.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'bench-deps: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

./scripts/engine-up.sh || die "no Docker engine: scripts/engine-up.sh failed"
./scripts/images.sh || die "the local images could not be built: scripts/images.sh failed"
docker image inspect berth/busybox:local >/dev/null 2>&1 || die "image berth/busybox:local is missing after scripts/images.sh"

compose_ok() { command -v docker-compose >/dev/null 2>&1 && docker-compose version --short >/dev/null 2>&1; }
if ! compose_ok; then
  [ "$(id -u)" = 0 ] || die "docker-compose is missing and this is not root: apt-get install docker-compose"
  say "installing docker-compose from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  # An install can fail on a stale or empty package list: update first when the list is old.
  if [ -z "$(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -mmin -1440 -print -quit 2>/dev/null)" ]; then
    apt-get update -qq >/dev/null || die "apt-get update failed"
  fi
  if ! apt-get install -y -qq docker-compose >/dev/null; then
    apt-get update -qq >/dev/null || die "apt-get update failed"
    apt-get install -y -qq docker-compose >/dev/null || die "apt-get install docker-compose failed"
  fi
  compose_ok || die "docker-compose was installed but does not run"
fi
version=$(docker-compose version --short 2>/dev/null)
case "$version" in
  1.*) ;;
  *) say "warning: docker-compose $version is not the 1.x line the bench was written against" ;;
esac

# GNU time: the hundredk workload reads a command's peak RSS from it (bash's `time` has none).
if [ ! -x /usr/bin/time ]; then
  [ "$(id -u)" = 0 ] || die "GNU time (/usr/bin/time) is missing and this is not root: apt-get install time"
  say "installing GNU time from Debian's packages"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq time >/dev/null || { apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq time >/dev/null; } || die "apt-get install time failed"
fi

[ -f dist/cli/index.js ] || die "berth is not built (dist/cli/index.js is missing): run npm run build (make setup does)"
say "engine $(docker version --format '{{.Server.Version}}'), docker-compose $version, berth built: ready"
