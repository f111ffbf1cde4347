#!/usr/bin/env bash
# curl and python3, the API's clients in the tests (test/engine/api.test.ts: curl on the socket;
# test/engine/python-client.test.ts: integrations/python run by python3). Idempotent: installs
# Debian's packages only when a command is missing. Fails loudly when it cannot.
set -euo pipefail
say() { printf 'clients: %s\n' "$*" >&2; }
need=()
command -v curl >/dev/null 2>&1 || need+=(curl)
command -v python3 >/dev/null 2>&1 || need+=(python3)
if [ ${#need[@]} -eq 0 ]; then
  say "$(curl --version | head -1 | cut -d' ' -f1-2), $(python3 --version 2>&1); using them"
  exit 0
fi
say "installing ${need[*]} from Debian's packages"
. "$(dirname "$0")/lib/apt.sh"
apt_install "${need[@]}"
command -v curl >/dev/null && command -v python3 >/dev/null || { say "installed, but curl or python3 is still missing"; exit 1; }
