#!/usr/bin/env bash
# The Node.js berth runs on: the machine's own when it is new enough (>= 22.22, package.json's
# `engines`), else a maintained Node installed from the npm registry into the checkout. No
# download from anywhere else: the `node-linux-<arch>` package ships the official binary.
#
#   scripts/node-up.sh          make .node/bin/node the Node berth uses (a link to the machine's
#                               own, or to .node/<version>/bin/node), saying once which and why
#   scripts/node-up.sh LINE     install the pinned release of the maintained line LINE (22, 24,
#                               26) if missing, and print the path of its node binary
#   scripts/node-up.sh --lines LINE...
#                               install the pinned release of each line given but the one
#                               .node/bin/node is (`make deps`: the lines `make test` runs the
#                               unit tests on; nothing is downloaded in the test phase)
#   scripts/node-up.sh --bin LINE
#                               print the path of LINE's node binary (.node/bin/node's when it is
#                               of that line), installing nothing: exit 1 when it is missing
#
# The Makefile puts .node/bin first on PATH, so every target, test, the bench and the images
# (scripts/images.sh copies `command -v node`) use the same Node.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
DIR="$REPO/.node"
# The lowest Node berth supports; keep in step with package.json's `engines` and bin/berth.js.
MIN=22.22.0
# One pinned release of each maintained line (the node-linux-* packages' versions).
declare -A PIN=([22]=22.23.5 [24]=24.22.3 [26]=26.12.1)

say() { printf 'node: %s\n' "$*" >&2; }

# version_ge A B: A >= B, both x.y.z
version_ge() { [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -1)" = "$2" ]; }

arch() {
  case "$(uname -m)" in
    x86_64) echo x64 ;;
    aarch64 | arm64) echo arm64 ;;
    ppc64le) echo ppc64le ;;
    s390x) echo s390x ;;
    *) say "no Node package for this machine ($(uname -s) $(uname -m)); install Node.js >= $MIN by hand"; exit 1 ;;
  esac
}

# install VERSION: .node/VERSION/bin/node from the npm registry (the binary alone: berth's native
# add-ons are optional, and npm runs no install scripts here).
install() {
  local version=$1 dest="$DIR/$1"
  if [ -x "$dest/bin/node" ]; then printf '%s\n' "$dest/bin/node"; return; fi
  local pkg tmp
  pkg="node-$(uname -s | tr '[:upper:]' '[:lower:]')-$(arch)@$version"
  mkdir -p "$DIR"
  tmp=$(mktemp -d "$DIR/.install.XXXXXX")
  trap 'rm -rf "$tmp"' RETURN
  say "installing Node $version from the npm registry ($pkg) into ${dest#"$REPO"/}"
  # npm pack checks the package's integrity against the registry's.
  (cd "$tmp" && npm pack --silent "$pkg" >/dev/null)
  mkdir -p "$tmp/out"
  tar -xzf "$tmp"/*.tgz -C "$tmp/out" --strip-components=1 package/bin/node
  "$tmp/out/bin/node" -e 0 || { say "the Node $version binary does not run on this machine"; exit 1; }
  rm -rf "$dest"
  touch "$tmp/out/bin/node"  # the package keeps 1985 as its files' time; make compares it with node_modules
  mv "$tmp/out" "$dest"
  printf '%s\n' "$dest/bin/node"
}

# The machine's node: the first on PATH that is not ours.
machine_node() {
  local p="" d
  local IFS=:
  for d in $PATH; do
    [ "$d" = "$DIR/bin" ] && continue
    if [ -x "$d/node" ]; then p="$d/node"; break; fi
  done
  printf '%s\n' "$p"
}

# pinned LINE: the pinned release of LINE, or exit 2 naming the lines known
pinned() {
  [ -n "${PIN[$1]:-}" ] || { say "no pinned release of Node $1 (known: ${!PIN[*]})"; exit 2; }
  printf '%s\n' "${PIN[$1]}"
}

# ours_line: the major version .node/bin/node is, if it is there
ours_line() {
  [ -x "$DIR/bin/node" ] && "$DIR/bin/node" -p 'process.versions.node.split(".")[0]' 2>/dev/null || true
}

if [ "${1:-}" = --lines ]; then
  shift
  ours=$(ours_line)
  for line in "$@"; do
    [ "$line" != "$ours" ] || continue
    version=$(pinned "$line")
    install "$version" >/dev/null
  done
  exit 0
fi

if [ "${1:-}" = --bin ]; then
  line=${2:?--bin LINE}
  if [ "$(ours_line)" = "$line" ]; then printf '%s\n' "$DIR/bin/node"; exit 0; fi
  version=$(pinned "$line")
  bin="$DIR/$version/bin/node"
  [ -x "$bin" ] || { say "Node $line is not installed in ${DIR#"$REPO"/}: make deps installs it"; exit 1; }
  printf '%s\n' "$bin"
  exit 0
fi

if [ $# -gt 0 ]; then
  version=$(pinned "$1")
  install "$version"
  exit 0
fi

mine=$(machine_node)
mine_version=""
[ -z "$mine" ] || mine_version=$("$mine" -p 'process.versions.node' 2>/dev/null || true)
if [ -n "$mine_version" ] && version_ge "$mine_version" "$MIN"; then
  target=$(readlink -f "$mine")
  why="the machine's own, >= $MIN"
else
  target=$(install "${PIN[22]}")
  why="the machine's node is ${mine_version:+v}${mine_version:-missing}; berth needs >= $MIN"
fi
mkdir -p "$DIR/bin"
if [ "$(readlink "$DIR/bin/node" 2>/dev/null || true)" != "$target" ]; then
  ln -sfn "$target" "$DIR/bin/node"
fi
say "using Node v$("$DIR/bin/node" -p 'process.versions.node') at ${DIR#"$REPO"/}/bin/node -> $target ($why)"
