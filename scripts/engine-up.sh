#!/usr/bin/env bash
# Make sure a Docker engine answers. Idempotent:
#   - if `docker info` answers, use that engine and change nothing;
#   - otherwise install docker.io (and busybox-static) from Debian's packages when missing,
#     start dockerd in the background (log: $BERTH_DOCKERD_LOG), and wait until it answers.
# Fails loudly, with the tail of the daemon's log, when the engine cannot be started.
set -euo pipefail

LOG=${BERTH_DOCKERD_LOG:-/tmp/berth-dockerd.log}
SOCK=/var/run/docker.sock
PIDFILE=/var/run/docker.pid
WAIT_SECONDS=${BERTH_ENGINE_WAIT:-60}

say() { printf 'engine: %s\n' "$*" >&2; }
answers() { timeout 10 docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

if answers; then
  say "engine answers ($(docker version --format '{{.Server.Version}}' 2>/dev/null)); using it"
  exit 0
fi

need_pkgs=()
command -v dockerd >/dev/null 2>&1 || need_pkgs+=(docker.io)
[ -x /bin/busybox ] || need_pkgs+=(busybox-static)
if [ ${#need_pkgs[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    say "need ${need_pkgs[*]} but not root; install them or start an engine yourself"; exit 1
  fi
  say "installing ${need_pkgs[*]} from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
fi

# A dockerd that was killed leaves its pid file behind; the next start then refuses.
if [ -f "$PIDFILE" ]; then
  pid=$(cat "$PIDFILE" 2>/dev/null || true)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && grep -q dockerd "/proc/$pid/comm" 2>/dev/null; then
    say "dockerd (pid $pid) is running but not answering yet; waiting for it"
  else
    say "removing stale $PIDFILE (pid ${pid:-?} is not alive)"
    rm -f "$PIDFILE"
  fi
fi

if ! pgrep -x dockerd >/dev/null 2>&1; then
  say "starting dockerd (log: $LOG)"
  # setsid: the daemon outlives this script and the test run that started it.
  setsid dockerd --host="unix://$SOCK" >>"$LOG" 2>&1 < /dev/null &
fi

for _ in $(seq 1 $((WAIT_SECONDS * 4))); do
  if answers; then
    say "engine answers ($(docker version --format '{{.Server.Version}}'))"
    exit 0
  fi
  sleep 0.25
done

say "the engine did not answer within ${WAIT_SECONDS}s; last lines of $LOG:"
tail -n 40 "$LOG" >&2 || true
exit 1
