#!/bin/sh
# Install svr from this checkout as a systemd service. Run as root: sudo ./install.sh
# Safe to run again: upgrades the code, keeps config, site, mods and state. See --help.
set -eu

usage() {
  cat <<'EOF'
Usage: sudo ./install.sh [--no-start] [--destdir DIR] [--node PATH]

Installs svr from this checkout:
  /usr/lib/svr                        the server (root-owned) with its production dependencies
  /usr/bin/svr                        command: svr check, svr reload, svr --version (uses /etc/svr-config.json)
  /usr/lib/systemd/system/svr.service the systemd unit (customise with `systemctl edit svr`)
  /etc/svr-config.json                the config, port 80; never overwritten: a newer default
                                      is written next to it as /etc/svr-config.json.new
  /var/www/svr                        the site (the default page only goes into an empty directory)
  /var/lib/svr                        state (generated certificates, temp/ for scripts and mods)
  /etc/svr/mods                       your mods (kept by upgrades and uninstall; mods an older
                                      install kept in /usr/lib/svr/mods are moved here)
  /etc/logrotate.d/svr                rotation of /var/log/svr/*.log (accessLog/errorLog), when
                                      logrotate is installed; kept on upgrade
  user and group svr                  system account, no login shell, no home

Running it again upgrades the code and restarts the service if it was running; the listening
sockets stay open meanwhile, so no connection is refused.
The first install enables and starts the service.

Options:
  --no-start        install and enable, but do not start or restart the service
  --destdir DIR     stage the files under DIR (also: DESTDIR=DIR), for packaging; no user is
                    created, nothing is started and ownership is left to the packager
  --node PATH       the Node.js the command and the unit run (default: node on PATH);
                    for packaging, e.g. --node /usr/bin/node
  -h, --help        this help

Uninstall: scripts/uninstall.sh (or /usr/lib/svr/scripts/uninstall.sh); it keeps the config
and state unless given --purge, and the site unless given --remove-site.
EOF
}

NO_START=0
DESTDIR=${DESTDIR:-}
RUN_NODE=
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --no-start) NO_START=1 ;;
    --destdir) [ $# -ge 2 ] || { echo "install.sh: --destdir needs a directory" >&2; exit 2; }; DESTDIR=$2; shift ;;
    --destdir=*) DESTDIR=${1#--destdir=} ;;
    --node) [ $# -ge 2 ] || { echo "install.sh: --node needs a path" >&2; exit 2; }; RUN_NODE=$2; shift ;;
    --node=*) RUN_NODE=${1#--node=} ;;
    *) echo "install.sh: unknown option: $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
DESTDIR=${DESTDIR%/}

SRC=$(cd "$(dirname "$0")" && pwd)
LIBDIR=/usr/lib/svr
BIN=/usr/bin/svr
UNIT=/usr/lib/systemd/system/svr.service
CONFIG=/etc/svr-config.json
SITE=/var/www/svr
STATE=/var/lib/svr
CONFIG_DIR=/etc/svr
ACCOUNT=svr
# The default config as installed last time; tells whether the shipped default changed since.
INSTALLED_DEFAULT=$LIBDIR/config/svr-config.installed.json

say() { printf '%s\n' "$*"; }
did() { printf '  * %s\n' "$*"; }
warn() { printf 'install.sh: warning: %s\n' "$*" >&2; }
die() { printf 'install.sh: %s\n' "$*" >&2; exit 1; }

# --- preconditions ---------------------------------------------------------------------------
if [ -z "$DESTDIR" ] && [ "$(id -u)" != 0 ]; then
  die "must run as root: sudo $0"
fi
if [ ! -f "$SRC/svr.js" ] || [ ! -f "$SRC/package.json" ]; then
  die "$SRC does not look like an svr checkout (no svr.js)"
fi

say "Installing svr from $SRC${DESTDIR:+ into $DESTDIR}"

node_major() { "$1" -e 'process.stdout.write(process.versions.node.split(".")[0])' 2>/dev/null || echo 0; }
NODE=$(command -v node 2>/dev/null || true)
if [ -z "$NODE" ] || [ "$(node_major "$NODE")" -lt 20 ]; then
  found=${NODE:+$("$NODE" --version 2>/dev/null)}
  if [ -f /etc/debian_version ] && command -v apt-get >/dev/null 2>&1 && [ -z "$DESTDIR" ]; then
    say "Node.js >= 20 is needed (found: ${found:-none}); installing Debian's nodejs"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q nodejs || { apt-get update -q || true; apt-get install -y -q nodejs; } ||
      die "apt-get could not install nodejs"
    did "installed nodejs with apt-get"
    NODE=$(command -v node 2>/dev/null || true)
  fi
  if [ -z "$NODE" ] || [ "$(node_major "$NODE")" -lt 20 ]; then
    die "Node.js >= 20 is needed (found: ${found:-none}). Install it from your distribution's packages or https://nodejs.org, then run this again."
  fi
fi
say "Using Node.js $("$NODE" --version) at $NODE"
# The node the installed command and unit run; install.sh itself uses $NODE.
RUN_NODE=${RUN_NODE:-$NODE}
case "$RUN_NODE" in /*) ;; *) die "--node needs an absolute path: $RUN_NODE" ;; esac

# --- the code, in a new tree swapped in at the end ---------------------------------------------
mkdir -p "$DESTDIR/usr/lib" "$DESTDIR/usr/bin" "$DESTDIR/usr/lib/systemd/system" "$DESTDIR/etc" "$DESTDIR/var/www" "$DESTDIR/var/lib"
NEW=$(mktemp -d "$DESTDIR/usr/lib/.svr.new.XXXXXX")
OLD=
# On any exit: drop the unfinished new tree; if the old one was moved aside and not replaced, put it back.
# shellcheck disable=SC2317
cleanup() {
  rm -rf "$NEW"
  if [ -n "$OLD" ]; then
    if [ -e "$DESTDIR$LIBDIR" ]; then rm -rf "$OLD"; else mv "$OLD" "$DESTDIR$LIBDIR"; fi
  fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

cp "$SRC/svr.js" "$SRC/package.json" "$NEW/"
for f in package-lock.json README.md LICENSE CHANGELOG.md; do [ ! -f "$SRC/$f" ] || cp "$SRC/$f" "$NEW/"; done
for d in lib config web docs; do [ ! -d "$SRC/$d" ] || cp -R "$SRC/$d" "$NEW/$d"; done
mkdir -p "$NEW/mods" "$NEW/scripts"
[ ! -f "$SRC/mods/README.md" ] || cp "$SRC/mods/README.md" "$NEW/mods/"
cp "$SRC/scripts/uninstall.sh" "$SRC/scripts/setup-system.sh" "$NEW/scripts/"

# Production dependencies: the checkout's node_modules when it holds every one the lockfile
# names (at the locked version), else npm ci --omit=dev.
DEPS=$("$NODE" - "$SRC" <<'EOF'
'use strict';
const fs = require('fs'), path = require('path');
const src = process.argv[2];
let lock;
try { lock = JSON.parse(fs.readFileSync(path.join(src, 'package-lock.json'), 'utf8')); } catch { process.exit(3); }
const top = new Set();
for (const [p, e] of Object.entries(lock.packages || {})) {
  if (!p || e.dev || e.devOptional || e.link || e.extraneous) continue;
  let v;
  try { v = JSON.parse(fs.readFileSync(path.join(src, p, 'package.json'), 'utf8')).version; } catch {}
  if (v !== e.version) { if (e.optional) continue; process.exit(4); }
  const m = /^node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(p);
  if (m) top.add(m[1]);
}
process.stdout.write([...top].join('\n'));
EOF
) && deps_ok=1 || deps_ok=0
if [ "$deps_ok" = 1 ]; then
  for dep in $DEPS; do
    mkdir -p "$NEW/node_modules/$(dirname "$dep")"
    cp -R "$SRC/node_modules/$dep" "$NEW/node_modules/$dep"
  done
  did "production dependencies copied from $SRC/node_modules"
else
  command -v npm >/dev/null 2>&1 || die "$SRC/node_modules is missing or incomplete, and there is no npm to run 'npm ci --omit=dev' (Debian's nodejs package comes without npm). Either:
  sudo apt-get install npm          then run this again;
  or run 'npm ci --omit=dev' in this checkout on a machine with npm and copy its node_modules here;
  or build the Debian package there (npm run deb) and install it here: sudo apt-get install ./svr_*.deb"
  say "node_modules missing or incomplete: running npm ci --omit=dev"
  # --prefer-offline: a tarball already in npm's cache is not asked for again (the lockfile's
  # integrity hashes still check it); half a second less per run.
  (cd "$NEW" && npm ci --omit=dev --no-audit --no-fund --prefer-offline) || die "npm ci --omit=dev failed"
  did "production dependencies installed with npm ci --omit=dev"
fi

# The installed default config: the shipped one on port 80, serving /var/www/svr, state in
# /var/lib/svr, its $schema pointing at the installed schema.
"$NODE" - "$SRC" "$NEW/config/svr-config.installed.json" "$LIBDIR" "$SITE" "$STATE" <<'EOF'
'use strict';
const fs = require('fs'), path = require('path');
const [src, out, libdir, site, state] = process.argv.slice(2);
let config = {};
try { config = JSON.parse(fs.readFileSync(path.join(src, 'config/svr-config.json'), 'utf8')); } catch {}
let props = {};
try { props = JSON.parse(fs.readFileSync(path.join(src, 'config/svr-config.schema.json'), 'utf8')).properties || {}; } catch {}
const result = {};
if (fs.existsSync(path.join(src, 'config/svr-config.schema.json'))) {
  result.$schema = path.join(libdir, 'config/svr-config.schema.json');
}
for (const k of Object.keys(config)) if (k !== '$schema') result[k] = config[k];
result.port = 80;
result.wwwroot = site;
if ('stateDirectory' in props || 'stateDirectory' in config) result.stateDirectory = state;
fs.mkdirSync(path.dirname(out), { recursive: true });
fs.writeFileSync(out, JSON.stringify(result, null, 2) + '\n');
EOF

# Root-owned, world-readable, writable by root only.
if [ -z "$DESTDIR" ]; then chown -R root:root "$NEW"; fi
chmod -R u=rwX,go=rX "$NEW"
chmod 755 "$NEW/svr.js" "$NEW/scripts/uninstall.sh" "$NEW/scripts/setup-system.sh"

# Was the service running before we touch it? Only then is it restarted.
SYSTEMD=0
if [ -z "$DESTDIR" ] && [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then SYSTEMD=1; fi
WAS_RUNNING=0
if [ "$SYSTEMD" = 1 ] && systemctl is-active --quiet svr 2>/dev/null; then WAS_RUNNING=1; fi
FIRST_INSTALL=1
[ ! -e "$DESTDIR$UNIT" ] || FIRST_INSTALL=0

PREV_DEFAULT=
[ ! -f "$DESTDIR$INSTALLED_DEFAULT" ] || PREV_DEFAULT=$(cat "$DESTDIR$INSTALLED_DEFAULT")

# Admin mods live in /etc/svr/mods; ones an older install kept in $LIBDIR/mods move there before
# that tree is replaced.
DESTDIR=$DESTDIR sh "$SRC/scripts/setup-system.sh" mods

if [ -e "$DESTDIR$LIBDIR" ]; then
  OLD="$DESTDIR/usr/lib/.svr.old.$$"
  mv "$DESTDIR$LIBDIR" "$OLD"
  mv "$NEW" "$DESTDIR$LIBDIR"
  rm -rf "$OLD"; OLD=
  did "upgraded the code in $LIBDIR"
else
  mv "$NEW" "$DESTDIR$LIBDIR"
  did "installed the code in $LIBDIR"
fi
chmod 755 "$DESTDIR$LIBDIR"

# --- user and group (the same step as the Debian package's postinst) ---------------------------
SETUP="$SRC/scripts/setup-system.sh"
DESTDIR=$DESTDIR sh "$SETUP" account

# --- the command and the unit --------------------------------------------------------------------
cat > "$DESTDIR$BIN.tmp" <<EOF
#!/bin/sh
# svr command (installed by install.sh): the server in $LIBDIR, with $CONFIG unless --config is given.
for a in "\$@"; do
  case "\$a" in --config|--config=*) exec "$RUN_NODE" "$LIBDIR/svr.js" "\$@" ;; esac
done
# As the unit's ConfigurationDirectory=svr: \`svr check\` loads the mods the service loads.
CONFIGURATION_DIRECTORY=$CONFIG_DIR
export CONFIGURATION_DIRECTORY
exec "$RUN_NODE" "$LIBDIR/svr.js" --config "$CONFIG" "\$@"
EOF
chmod 755 "$DESTDIR$BIN.tmp"
mv "$DESTDIR$BIN.tmp" "$DESTDIR$BIN"
did "command $BIN"

sed -e "s|/usr/bin/node |$RUN_NODE |g" "$SRC/systemd/svr.service" > "$DESTDIR$UNIT.tmp"
chmod 644 "$DESTDIR$UNIT.tmp"
mv "$DESTDIR$UNIT.tmp" "$DESTDIR$UNIT"
did "unit $UNIT"

# --- config, site, state -------------------------------------------------------------------------
NEW_DEFAULT=$(cat "$DESTDIR$INSTALLED_DEFAULT")
install_config() { # install_config FILE
  cp "$DESTDIR$INSTALLED_DEFAULT" "$1.tmp"
  if [ -z "$DESTDIR" ]; then chown root:"$ACCOUNT" "$1.tmp"; fi
  chmod 640 "$1.tmp"
  mv "$1.tmp" "$1"
}
if [ ! -e "$DESTDIR$CONFIG" ]; then
  install_config "$DESTDIR$CONFIG"
  did "config $CONFIG (port 80, site $SITE)"
elif [ "$NEW_DEFAULT" != "$PREV_DEFAULT" ] && [ "$NEW_DEFAULT" != "$(cat "$DESTDIR$CONFIG")" ]; then
  install_config "$DESTDIR$CONFIG.new"
  did "kept $CONFIG; the default changed: compare it with $CONFIG.new"
else
  did "kept $CONFIG"
fi

DESTDIR=$DESTDIR sh "$SETUP" site "$SRC/web"
DESTDIR=$DESTDIR sh "$SETUP" state

# --- logrotate, for accessLog/errorLog files in /var/log/svr (it does nothing without them) -----
LOGROTATE=/etc/logrotate.d/svr
if [ -e "$DESTDIR$LOGROTATE" ]; then
  did "kept $LOGROTATE"
elif [ -n "$DESTDIR" ] || [ -d /etc/logrotate.d ]; then
  mkdir -p "$DESTDIR/etc/logrotate.d"
  cp "$SRC/systemd/svr.logrotate" "$DESTDIR$LOGROTATE.tmp"
  chmod 644 "$DESTDIR$LOGROTATE.tmp"
  mv "$DESTDIR$LOGROTATE.tmp" "$DESTDIR$LOGROTATE"
  did "logrotate config $LOGROTATE (for log files in /var/log/svr)"
fi

# --- the service ---------------------------------------------------------------------------------
CHECK_OK=1
if [ -z "$DESTDIR" ]; then
  if ! CHECK=$("$NODE" "$LIBDIR/svr.js" --check --config "$CONFIG" 2>&1); then
    CHECK_OK=0
    warn "$CONFIG has errors; the service will not start until they are fixed:"
    printf '%s\n' "$CHECK" >&2
  fi
fi

STATUS=
if [ "$SYSTEMD" = 1 ]; then
  systemctl daemon-reload
  if [ "$FIRST_INSTALL" = 1 ]; then
    systemctl enable svr.service >/dev/null 2>&1 && did "enabled svr.service (starts at boot)"
  fi
  if [ "$NO_START" = 1 ]; then
    STATUS="not started (--no-start)"
  elif [ "$CHECK_OK" = 0 ]; then
    STATUS="not started: fix $CONFIG first"
  elif [ "$WAS_RUNNING" = 1 ]; then
    if systemctl restart svr.service; then STATUS="restarted"; else STATUS="restart FAILED: journalctl -u svr"; fi
  elif [ "$FIRST_INSTALL" = 1 ]; then
    if systemctl start svr.service; then STATUS="started"; else STATUS="start FAILED: journalctl -u svr"; fi
  else
    STATUS="left stopped (it was not running)"
  fi
elif [ -z "$DESTDIR" ]; then
  STATUS="not started: systemd is not running here"
fi
[ -z "$STATUS" ] || did "service: $STATUS"

say ""
say "Next steps:"
step() { printf '  %-36s %s\n' "$1" "$2"; }
step "sudoedit $CONFIG" "port, wwwroot, rewriteMap, enableDirectoryListing, ..."
step "sudo svr check" "validate the config (and scripts, mods)"
step "$CONFIG_DIR/mods/" "your mods"
step "systemctl restart svr" "apply it (or: systemctl reload svr, a rolling reload)"
step "$SITE/" "your site; a serverSideScript.js there runs for every request"
step "journalctl -u svr -f" "access log and diagnostics"
step "$LIBDIR/scripts/uninstall.sh" "remove (keeps config and state unless --purge, the site unless --remove-site)"
case "$STATUS" in *FAILED*) exit 1 ;; esac
exit 0
