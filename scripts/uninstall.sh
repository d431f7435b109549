#!/bin/sh
# Remove svr as installed by install.sh. Run as root. See --help.
set -eu

usage() {
  cat <<'EOF'
Usage: sudo scripts/uninstall.sh [--purge] [--remove-site]

Stops and disables svr.service and removes the unit, /usr/lib/svr and /usr/bin/svr.
Keeps /etc/svr-config.json, your mods in /etc/svr/mods, the state /var/lib/svr, the log files in
/var/log/svr with /etc/logrotate.d/svr, and the user svr unless --purge is given.
Keeps the site /var/www/svr, your content, unless --remove-site is given (--purge alone never
removes it).

Options:
  --purge       also remove the config, the mods in /etc/svr/mods, the state, the log files
                and the svr user and group
  --remove-site also remove the site /var/www/svr and everything in it
  --destdir DIR remove from a staged tree (also: DESTDIR=DIR); nothing is stopped
  -h, --help    this help
EOF
}

PURGE=0
REMOVE_SITE=0
DESTDIR=${DESTDIR:-}
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --purge) PURGE=1 ;;
    --remove-site) REMOVE_SITE=1 ;;
    --destdir) [ $# -ge 2 ] || { echo "uninstall.sh: --destdir needs a directory" >&2; exit 2; }; DESTDIR=$2; shift ;;
    --destdir=*) DESTDIR=${1#--destdir=} ;;
    *) echo "uninstall.sh: unknown option: $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
DESTDIR=${DESTDIR%/}

LIBDIR=/usr/lib/svr
BIN=/usr/bin/svr
UNIT=/usr/lib/systemd/system/svr.service
CONFIG=/etc/svr-config.json
SITE=/var/www/svr
STATE=/var/lib/svr
MODS=/etc/svr/mods
LOGS=/var/log/svr
LOGROTATE=/etc/logrotate.d/svr
ACCOUNT=svr

did() { printf '  * %s\n' "$*"; }
if [ -z "$DESTDIR" ] && [ "$(id -u)" != 0 ]; then
  echo "uninstall.sh: must run as root: sudo $0" >&2
  exit 1
fi

# This script may itself live in $LIBDIR: read it whole before deleting anything.
{
say() { printf '%s\n' "$*"; }
say "Uninstalling svr${DESTDIR:+ from $DESTDIR}"

if [ -z "$DESTDIR" ] && [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
  if systemctl cat svr.service >/dev/null 2>&1; then
    systemctl disable --now svr.service >/dev/null 2>&1 || systemctl stop svr.service || true
    did "stopped and disabled svr.service"
  fi
fi
for f in "$UNIT" /etc/systemd/system/svr.service; do
  if [ -e "$DESTDIR$f" ]; then rm -f "$DESTDIR$f"; did "removed $f"; fi
done
if [ -z "$DESTDIR" ] && [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
  systemctl daemon-reload
  systemctl reset-failed svr.service >/dev/null 2>&1 || true
fi
if [ -e "$DESTDIR$LIBDIR" ]; then rm -rf "$DESTDIR$LIBDIR"; did "removed $LIBDIR"; fi
if [ -e "$DESTDIR$BIN" ]; then rm -f "$DESTDIR$BIN"; did "removed $BIN"; fi

if [ "$PURGE" = 1 ]; then
  for p in "$CONFIG" "$CONFIG.new" "$MODS" "$STATE" "$LOGROTATE" "$LOGS"; do
    if [ -e "$DESTDIR$p" ]; then rm -rf "$DESTDIR$p"; did "removed $p"; fi
  done
  rmdir "$DESTDIR${MODS%/mods}" 2>/dev/null || true
  if [ -z "$DESTDIR" ]; then
    if getent passwd "$ACCOUNT" >/dev/null; then userdel "$ACCOUNT"; did "removed user $ACCOUNT"; fi
    if getent group "$ACCOUNT" >/dev/null; then groupdel "$ACCOUNT"; did "removed group $ACCOUNT"; fi
  fi
else
  kept=
  for p in "$CONFIG" "$MODS" "$STATE" "$LOGS" "$LOGROTATE"; do
    if [ -e "$DESTDIR$p" ]; then kept="$kept$p, "; fi
  done
  say "Kept: ${kept}the user $ACCOUNT (remove them with --purge)."
fi
if [ "$REMOVE_SITE" = 1 ]; then
  if [ -e "$DESTDIR$SITE" ]; then rm -rf "$DESTDIR$SITE"; did "removed the site $SITE"; fi
elif [ -e "$DESTDIR$SITE" ]; then
  say "Kept the site $SITE (remove it with --remove-site)."
fi
exit 0
}
