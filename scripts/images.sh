#!/usr/bin/env bash
# Build berth's local images without a registry, by `docker import` of a root filesystem.
#   berth/busybox:local        static busybox with the usual applets, /workspace and /results
#   berth/egress-proxy:local   the egress proxy (docs/EGRESS.md): the node binary on PATH (.node/bin/node under make), its
#                              shared libraries and the bundled proxy (scripts/build-proxy.sh)
#   berth/berth:local          berth itself, the same way, from its single-file build (docs/INSTALL.md)
# Idempotent: an image that already exists with the same content label is kept.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)

say() { printf 'images: %s\n' "$*" >&2; }
BUSYBOX=${BUSYBOX:-/bin/busybox}
[ -x "$BUSYBOX" ] || { say "no static busybox at $BUSYBOX (apt-get install busybox-static)"; exit 1; }

build_busybox() {
  local tag=berth/busybox:local
  local digest
  digest=$(sha256sum "$BUSYBOX" | cut -c1-16)
  if [ "$(docker image inspect --format '{{index .Config.Labels "dev.berth.test-image"}}' "$tag" 2>/dev/null || true)" = "busybox-$digest" ]; then
    say "$tag is up to date"; return
  fi
  local root
  root=$(mktemp -d)
  mkdir -p "$root/bin" "$root/tmp" "$root/workspace" "$root/results" "$root/etc" "$root/run"
  chmod 1777 "$root/tmp"
  cp "$BUSYBOX" "$root/bin/busybox"
  for a in sh ash sleep echo cat ls cp mv rm mkdir rmdir true false env id wc grep head tail \
           nc wget seq dd yes kill printf test stat sha256sum md5sum touch date hostname ip \
           ping nslookup chmod chown ln find xargs sed awk sort uniq tr cut tee od hexdump \
           readlink realpath dirname basename pwd ps uname whoami sync; do
    ln -s busybox "$root/bin/$a"
  done
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' > "$root/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' > "$root/etc/group"
  tar -C "$root" -c . | docker import \
    -c 'ENV PATH=/bin' -c 'WORKDIR /workspace' -c 'CMD ["sh"]' \
    -c "LABEL dev.berth.test-image=busybox-$digest" - "$tag" >/dev/null
  rm -rf "$root"
  say "built $tag"
}

# The proxy bundle is rebuilt when missing or older than any of its inputs.
proxy_bundle() {
  local bundle="$REPO/dist/proxy/berth-egress-proxy.js"
  if [ ! -f "$bundle" ] \
     || [ -n "$(find "$REPO/src/proxy" "$REPO/scripts/build-proxy.sh" "$REPO/package-lock.json" -newer "$bundle" -print -quit)" ]; then
    "$REPO/scripts/build-proxy.sh"
  fi
  printf '%s\n' "$bundle"
}

# An image of one bundled Node program: the node binary on PATH (.node/bin/node under make), its shared libraries and the
# bundle as /app/<app>. Args: tag, content-label prefix, bundle, app file name, then `-c` changes.
# Rebuilt only when its content label (recipe, bundle, node, libraries) changes.
build_node_image() {
  local tag=$1 prefix=$2 bundle=$3 app=$4
  shift 4
  local changes=("$@")
  local node_bin
  node_bin=$(readlink -f "$(command -v node)") || { say "no node on PATH"; exit 1; }
  # Every absolute path ldd names: the shared libraries and the dynamic loader.
  local libs=()
  mapfile -t libs < <(ldd "$node_bin" | grep -o '/[^ ]*' | sort -u)
  [ ${#libs[@]} -gt 0 ] || say "ldd lists no libraries for $node_bin; taking it as a static binary"
  # The content label covers the recipe, the bundle, node and every library, so any change rebuilds.
  local digest
  digest=$( { printf '%s\n' "${changes[@]}"; sha256sum "$bundle" "$node_bin" ${libs[@]+"${libs[@]}"} | cut -c1-64; } \
            | sha256sum | cut -c1-16)
  if [ "$(docker image inspect --format '{{index .Config.Labels "dev.berth.image-content"}}' "$tag" 2>/dev/null || true)" = "$prefix-$digest" ]; then
    say "$tag is up to date"; return 1
  fi
  local root
  root=$(mktemp -d)
  mkdir -p "$root/usr/bin" "$root/app" "$root/etc" "$root/tmp"
  chmod 1777 "$root/tmp"
  cp "$node_bin" "$root/usr/bin/node"
  local lib
  for lib in ${libs[@]+"${libs[@]}"}; do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
  install -m 0644 "$bundle" "$root/app/$app"
  printf 'root:x:0:0:root:/root:/bin/false\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' > "$root/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' > "$root/etc/group"
  local previous
  previous=$(docker image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)
  tar -C "$root" --owner=0 --group=0 --numeric-owner -c . | docker import "${changes[@]}" \
    -c "LABEL dev.berth.image-content=$prefix-$digest" - "$tag" >/dev/null
  rm -rf "$root"
  # The previous build of this tag is now untagged: drop it unless a container still uses it.
  [ -z "$previous" ] || docker image rm "$previous" >/dev/null 2>&1 || true
}

build_proxy() {
  # BERTH_PROXY_TAG: another tag, so a work tree can test its own proxy beside the shared one.
  local tag=${BERTH_PROXY_TAG:-berth/egress-proxy:local}
  build_node_image "$tag" egress-proxy "$(proxy_bundle)" berth-egress-proxy.js \
    -c 'ENTRYPOINT ["/usr/bin/node", "/app/berth-egress-proxy.js"]' \
    -c 'USER 65534' \
    -c 'WORKDIR /app' \
    -c 'ENV PATH=/usr/bin' \
    -c 'EXPOSE 3128/tcp' || return 0
  # A smoke run: the image's node starts and the proxy rejects a bad configuration (exit 2).
  local rc=0
  docker run --rm --network none --label dev.berth.image-smoke=egress-proxy -e BERTH_EGRESS_ALLOW=bad "$tag" >/dev/null 2>&1 || rc=$?
  [ "$rc" = 2 ] || { say "built $tag but its smoke run exited $rc, not 2"; exit 1; }
  say "built $tag"
}

# The single-file CLI (scripts/build-cli.ts) is rebuilt when missing or older than its inputs.
cli_bundle() {
  local bundle="$REPO/dist/berth.cjs"
  if [ ! -f "$bundle" ] \
     || [ -n "$(find "$REPO/src" "$REPO/schemas" "$REPO/scripts/build-cli.ts" "$REPO/package.json" "$REPO/package-lock.json" -newer "$bundle" -print -quit)" ]; then
    (cd "$REPO" && npm run --silent build:cli)
  fi
  printf '%s\n' "$bundle"
}

# berth itself (docs/INSTALL.md): runs as root to reach the engine's socket, which the user mounts.
build_berth() {
  local tag=berth/berth:local
  build_node_image "$tag" berth "$(cli_bundle)" berth.cjs \
    -c 'ENTRYPOINT ["/usr/bin/node", "/app/berth.cjs"]' \
    -c 'CMD ["--help"]' \
    -c 'ENV PATH=/usr/bin' \
    -c 'LABEL org.opencontainers.image.title=berth' || return 0
  local out
  out=$(docker run --rm --network none --label dev.berth.image-smoke=berth "$tag" version) \
    || { say "built $tag but its smoke run failed"; exit 1; }
  say "built $tag ($out)"
}

# BERTH_IMAGES picks which to build (default: all), e.g. BERTH_IMAGES=busybox for a private test engine.
for image in ${BERTH_IMAGES:-busybox proxy berth}; do
  case "$image" in
    busybox) build_busybox ;;
    proxy) build_proxy ;;
    berth) build_berth ;;
    *) say "unknown image $image (known: busybox proxy berth)"; exit 2 ;;
  esac
done
