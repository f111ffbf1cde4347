#!/usr/bin/env bash
# Bundle berth's egress proxy (src/proxy/main.ts) into one CommonJS file for Node 22.22 or later:
#   dist/proxy/berth-egress-proxy.js
# The bundle has no dependencies outside Node's core modules; scripts/images.sh puts it into
# the berth/egress-proxy:local image. Needs `npm ci` (esbuild is a devDependency).
# Deterministic: the same sources give the same bytes, so the image's content label is stable.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${BERTH_PROXY_BUNDLE:-dist/proxy/berth-egress-proxy.js}
ESBUILD=node_modules/.bin/esbuild
[ -x "$ESBUILD" ] || { printf 'build-proxy: %s is missing: run npm ci\n' "$ESBUILD" >&2; exit 1; }

mkdir -p "$(dirname "$OUT")"
"$ESBUILD" src/proxy/main.ts --bundle --platform=node --target=node22 --format=cjs \
  --legal-comments=none --log-level=warning --outfile="$OUT"
printf 'build-proxy: wrote %s\n' "$OUT" >&2
