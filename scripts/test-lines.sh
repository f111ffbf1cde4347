#!/usr/bin/env bash
# The unit tests on every maintained line of Node.js given (default 22 24 26) other than the one
# berth uses (the whole suite ran on that one): each line's pinned release, installed by
# `make deps` (scripts/node-up.sh --lines); nothing is downloaded here.
set -euo pipefail
cd "$(dirname "$0")/.."
mine=$(node -p 'process.versions.node.split(".")[0]')
lines=("$@")
[ ${#lines[@]} -gt 0 ] || lines=(22 24 26)
for line in "${lines[@]}"; do
  [ "$line" != "$mine" ] || continue
  bin=$(./scripts/node-up.sh --bin "$line")
  echo "unit tests on Node $("$bin" -p process.version)"
  "$bin" node_modules/mocha/bin/mocha.js --config .mocharc.unit.cjs
done
