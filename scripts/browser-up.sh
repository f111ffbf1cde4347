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
say "installing chromium from Debian's packages"
. "$(dirname "$0")/lib/apt.sh"
apt_install chromium fonts-dejavu-core
if ! "$BIN" --version >/dev/null 2>&1; then
  say "chromium was installed but $BIN --version fails"; exit 1
fi
say "$("$BIN" --version 2>/dev/null) installed"
