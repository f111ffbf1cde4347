#!/usr/bin/env bash
# Build berth's local test images without a registry, by `docker import` of a root filesystem.
#   berth/busybox:local   static busybox with the usual applets, /workspace and /results
# Idempotent: an image that already exists with the same content label is kept.
set -euo pipefail

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
  trap 'rm -rf "$root"' RETURN
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
  say "built $tag"
}

build_busybox
