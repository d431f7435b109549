#!/bin/sh
# The system side of an svr install, shared by install.sh and the Debian package's postinst
# (scripts/deb/postinst), so both make the same account, state directory and site. Run as root.
# Every step is idempotent: it only makes what is missing.
#
#   setup-system.sh account        group and user svr: system account, no login shell, no home
#   setup-system.sh state          /var/lib/svr, owned by svr, mode 750
#   setup-system.sh site WEBDIR    copy WEBDIR into /var/www/svr when that is missing or empty
#   setup-system.sh mods           /etc/svr/mods, the admin's mods; moves those an older install
#                                  kept in /usr/lib/svr/mods there, once, each with a line
#
# DESTDIR=DIR stages under DIR instead (for packaging): no account, ownership left to the packager.
set -eu

ACCOUNT=svr
SITE=/var/www/svr
STATE=/var/lib/svr
LIBDIR=/usr/lib/svr
# The unit's ConfigurationDirectory=svr makes mods/ in it svr's default mods directory.
MODS=/etc/svr/mods
DESTDIR=${DESTDIR:-}
DESTDIR=${DESTDIR%/}

did() { printf '  * %s\n' "$*"; }
staged() { [ -n "$DESTDIR" ]; }

account() {
  staged && return 0
  if ! getent group "$ACCOUNT" >/dev/null; then
    groupadd --system "$ACCOUNT"
    did "created system group $ACCOUNT"
  fi
  if ! getent passwd "$ACCOUNT" >/dev/null; then
    nologin=/usr/sbin/nologin
    [ -x "$nologin" ] || nologin=/sbin/nologin
    [ -x "$nologin" ] || nologin=/bin/false
    useradd --system --gid "$ACCOUNT" --no-create-home --home-dir /nonexistent \
      --shell "$nologin" --comment "svr web server" "$ACCOUNT"
    did "created system user $ACCOUNT (shell $nologin, no home)"
  fi
}

state() {
  mkdir -p "$DESTDIR$STATE"
  staged || chown "$ACCOUNT:$ACCOUNT" "$STATE"
  chmod 750 "$DESTDIR$STATE"
  did "state directory $STATE"
}

# The default page only goes into an empty site: an admin's files are never overwritten.
site() {
  web=$1
  [ -d "$web" ] || { echo "setup-system.sh: no such directory: $web" >&2; exit 1; }
  mkdir -p "$DESTDIR$SITE"
  if [ -n "$(ls -A "$DESTDIR$SITE")" ]; then
    did "kept the site in $SITE"
    return 0
  fi
  cp -R "$web/." "$DESTDIR$SITE/"
  staged || chown -R root:root "$SITE"
  chmod -R u=rwX,go=rX "$DESTDIR$SITE"
  did "default site in $SITE"
}

# Admin mods live apart from the code, which an upgrade replaces and uninstall.sh removes. Before
# that, they lived in /usr/lib/svr/mods: any found there but svr's README are moved, one line each.
mods() {
  mkdir -p "$DESTDIR$MODS"
  chmod 755 "$DESTDIR${MODS%/mods}" "$DESTDIR$MODS"
  old=$DESTDIR$LIBDIR/mods
  [ -d "$old" ] && [ ! -L "$old" ] || return 0
  for m in "$old"/* "$old"/.[!.]*; do
    [ -e "$m" ] || [ -L "$m" ] || continue
    name=$(basename "$m")
    [ "$name" != README.md ] || continue
    if [ -e "$DESTDIR$MODS/$name" ] || [ -L "$DESTDIR$MODS/$name" ]; then
      printf 'setup-system.sh: warning: not moved: %s (%s has one of that name; compare them)\n' "$LIBDIR/mods/$name" "$MODS" >&2
      continue
    fi
    mv "$m" "$DESTDIR$MODS/"
    did "moved your mod $name from $LIBDIR/mods to $MODS, where admin mods live now"
  done
}

case "${1:-}" in
  account) account ;;
  state) state ;;
  site) [ $# -eq 2 ] || { echo "usage: $0 site WEBDIR" >&2; exit 2; }; site "$2" ;;
  mods) mods ;;
  *) echo "usage: $0 account | state | site WEBDIR | mods" >&2; exit 2 ;;
esac
