#!/usr/bin/env bash
# Make sure Debian's chromium is installed at /usr/bin/chromium, for the report's browser tests
# and `make bench` (playwright-core drives it; it never downloads a browser of its own).
# Idempotent: changes nothing when /usr/bin/chromium runs. Fails loudly when it cannot install it.
set -euo pipefail

BIN=/usr/bin/chromium
say() { printf 'browser: %s\n' "$*" >&2; }

if [ -x "$BIN" ] && "$BIN" --version >/dev/null 2>&1; then
  say "$("$BIN" --version 2>/dev/null); using it"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  say "need Debian's chromium at $BIN but not root; install it (apt-get install chromium)"; exit 1
fi
say "installing chromium from Debian's packages"
export DEBIAN_FRONTEND=noninteractive
# A shared apt lock (another setup installing at the same time) is waited for, not fought.
apt-get -o DPkg::Lock::Timeout=300 update -qq >/dev/null
apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
if ! "$BIN" --version >/dev/null 2>&1; then
  say "chromium was installed but $BIN --version fails"; exit 1
fi
say "$("$BIN" --version 2>/dev/null) installed"
