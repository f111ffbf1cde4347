# Debian's packages for the project's setup scripts (sourced, bash). `apt_install PKG...` installs
# them: root only, no prompt, no recommended extras, and no service started (a policy-rc.d that
# says "not allowed", for the install only, where the machine has none) or restarted (needrestart),
# a shared apt lock (another setup installing at the same time) waited for, not fought.
apt_install() {
  if [ "$(id -u)" != 0 ]; then
    printf 'need %s but not root; install them (Debian: apt-get install %s)\n' "$*" "$*" >&2
    return 1
  fi
  local policy=/usr/sbin/policy-rc.d made='' rc=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy"
    chmod 755 "$policy"
    made=1
  fi
  {
    DEBIAN_FRONTEND=noninteractive NEEDRESTART_SUSPEND=1 apt-get -o DPkg::Lock::Timeout=300 update -qq >/dev/null &&
      DEBIAN_FRONTEND=noninteractive NEEDRESTART_SUSPEND=1 apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "$@" >/dev/null
  } || rc=$?
  if [ -n "$made" ]; then rm -f "$policy"; fi
  return "$rc"
}
