#!/usr/bin/env bash
# Sourced by the test-tool installers: apt_install_quietly PACKAGE... installs Debian packages for
# the tests without leaving the machine changed beyond the files: no service they ship is started
# (policy-rc.d answers 101 for the install, unless the machine already has a policy of its own),
# and none is left enabled at boot (apt enables them, so prometheus.service would start on the
# next boot of a developer's machine and listen on :9090). The tests start their own servers.
apt_install_quietly () {
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  local policy=/usr/sbin/policy-rc.d temporary=
  if [ ! -e "$policy" ]; then
    temporary=$policy
    printf '#!/bin/sh\nexit 101\n' > "$policy"
    chmod 755 "$policy"
  fi
  local status=0
  apt-get install -y -qq --no-install-recommends "$@" >&2 || status=$?
  [ -z "$temporary" ] || rm -f "$temporary"
  [ "$status" -eq 0 ] || return "$status"
  local package unit
  for package in "$@"; do
    for unit in $(dpkg -L "$package" 2>/dev/null | grep -E '^/(usr/)?lib/systemd/system/[^/]+\.(service|socket|timer)$' | xargs -r -n1 basename); do
      case "$unit" in *@.*) continue ;; esac # templates are enabled through their instances
      # systemctl edits the links without a running systemd (deb-systemd-helper only runs under dpkg).
      command -v systemctl >/dev/null && systemctl disable "$unit" >/dev/null 2>&1 || true
    done
  done
}
