#!/bin/sh
# Guest root for test/system/service.test.js: a Debian trixie (13, the current stable release) minbase with
# systemd, Debian's Node.js (nodejs 20.x in trixie) and logrotate, booted with systemd-nspawn.
#
#   test/support/guest/root.sh tools        install systemd-container and debootstrap when missing
#   test/support/guest/root.sh cached       print the directory of the cached guest root (built when missing)
#
# The root is built once with debootstrap (about a minute, ~280 MB) and cached as a tarball in
# $SVR_TEST_CACHE (default /var/cache/svr-test), and beside it unpacked once (2 s). Guests boot from
# that directory with --volatile=overlay, so they never write to it: every change goes to a tmpfs
# above it, and several guests can boot from it at once. Delete the cache directory to rebuild.
# $SVR_TEST_MIRROR overrides the Debian mirror (default: the one apt uses on this machine).
set -eu

CACHE=${SVR_TEST_CACHE:-/var/cache/svr-test}
SUITE=trixie
PACKAGES=systemd,systemd-sysv,dbus,curl,sudo,ca-certificates,nodejs,logrotate
# Bump when the way the root is prepared changes, so an old cache is not reused.
RECIPE=2

log() { printf 'guest root: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

tools() {
  missing=
  command -v systemd-nspawn >/dev/null 2>&1 || missing="$missing systemd-container"
  command -v debootstrap >/dev/null 2>&1 || [ -x /usr/sbin/debootstrap ] || missing="$missing debootstrap"
  [ -z "$missing" ] && return 0
  command -v apt-get >/dev/null 2>&1 || die "need$missing and there is no apt-get to install them"
  log "installing$missing"
  export DEBIAN_FRONTEND=noninteractive
  # The lock timeout: test files that run beside this one may be installing packages too.
  # shellcheck disable=SC2086
  apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends $missing >&2 ||
    { apt-get -o DPkg::Lock::Timeout=300 update -q >&2 || true
      apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends $missing >&2; } ||
    die "apt-get could not install$missing"
}

# The Debian mirror apt already uses here (deb822 or one-line sources), else deb.debian.org.
mirror() {
  if [ -n "${SVR_TEST_MIRROR:-}" ]; then echo "$SVR_TEST_MIRROR"; return; fi
  m=$(cat /etc/apt/sources.list.d/*.sources /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
    awk '
      /^URIs:/ { for (i = 2; i <= NF; i++) if ($i ~ /\/debian\/?$/) { print $i; exit } }
      /^deb / { for (i = 2; i <= NF; i++) if ($i ~ /^https?:.*\/debian\/?$/) { print $i; exit } }')
  echo "${m:-http://deb.debian.org/debian}"
}

cache_file() {
  key=$(printf '%s %s %s %s' "$SUITE" "$PACKAGES" "$RECIPE" "$(uname -m)" | sha256sum | cut -c1-12)
  echo "$CACHE/$SUITE-minbase-$key.tar.gz"
}

build() { # build DIR: debootstrap into DIR and prepare it for booting
  dir=$1
  m=$(mirror)
  log "debootstrap $SUITE from $m into $dir (once; cached afterwards)"
  PATH="$PATH:/usr/sbin:/sbin" debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$dir" "$m" >&2 ||
    die "debootstrap failed"
  # No package downloads in the guest (it has no network); a smaller cache.
  rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/*
  # The test drives the guest with nsenter, no console login is needed.
  ln -sf /dev/null "$dir/etc/systemd/system/console-getty.service"
  echo svr-guest > "$dir/etc/hostname"
}

cached() {
  tools
  tarball=$(cache_file)
  unpacked=${tarball%.tar.gz}.root
  if [ ! -s "$tarball" ]; then
    mkdir -p "$CACHE"
    tmp="$unpacked.tmp.$$"
    trap 'rm -rf "$tmp" "$tarball.tmp.$$"' EXIT
    mkdir "$tmp"
    build "$tmp"
    log "caching the root as $tarball"
    tar -C "$tmp" --numeric-owner --xattrs -I "gzip -1" -cf "$tarball.tmp.$$" .
    mv "$tarball.tmp.$$" "$tarball"
    # Another run may have built it meanwhile: keep theirs.
    mv -T "$tmp" "$unpacked" 2>/dev/null || rm -rf "$tmp"
    trap - EXIT
  elif [ ! -d "$unpacked" ]; then
    log "unpacking cached root $tarball into $unpacked (once)"
    tmp="$unpacked.tmp.$$"
    trap 'rm -rf "$tmp"' EXIT
    mkdir "$tmp"
    tar -C "$tmp" --numeric-owner --xattrs -xzf "$tarball"
    mv -T "$tmp" "$unpacked" 2>/dev/null || rm -rf "$tmp"
    trap - EXIT
  else
    log "cached root $unpacked"
  fi
  echo "$unpacked"
}

case "${1:-}" in
  tools) tools ;;
  cached) cached ;;
  *) echo "usage: $0 tools | cached" >&2; exit 2 ;;
esac
