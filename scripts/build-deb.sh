#!/bin/sh
# Build the Debian package svr_<version>_all.deb from this checkout with dpkg-deb. See --help.
# The files are staged by install.sh --destdir (the same layout as a `sudo ./install.sh`), the
# maintainer scripts are scripts/deb/, the account and site steps are scripts/setup-system.sh.
set -eu
umask 022

usage() {
  cat <<'EOF'
Usage: scripts/build-deb.sh [--version V] [--out DIR]   (or: npm run deb)

Builds svr_<version>_all.deb with dpkg-deb, from the files in this checkout (committed or not),
with the production dependencies installed fresh by `npm ci --omit=dev` (needs the npm registry).
The package depends on Debian's nodejs (>= 20); /etc/svr-config.json is a conffile.

Options:
  --version V   the version of the package and of `svr --version` (default: package.json's);
                e.g. 0.1.0+local1 for a local rebuild that upgrades 0.1.0
  --out DIR     where to write the .deb (default: dist/ in the checkout)
  --reuse-node-modules
                take the production dependencies from the checkout's node_modules when it
                holds every one at its locked version (as install.sh does), instead of npm ci;
                for local and test builds (no registry, ~1.5 s less CPU). Release builds: without.
  -h, --help    this help

Environment: DEBFULLNAME and DEBEMAIL set the Maintainer field (default: the svr authors
<svr@example.org>); SOURCE_DATE_EPOCH sets the date of the package's changelog entry.
EOF
}

SRC=$(cd "$(dirname "$0")/.." && pwd)
VERSION=
OUT=$SRC/dist
REUSE_MODULES=
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --version) [ $# -ge 2 ] || { echo "build-deb.sh: --version needs a value" >&2; exit 2; }; VERSION=$2; shift ;;
    --version=*) VERSION=${1#--version=} ;;
    --out) [ $# -ge 2 ] || { echo "build-deb.sh: --out needs a directory" >&2; exit 2; }; OUT=$2; shift ;;
    --out=*) OUT=${1#--out=} ;;
    --reuse-node-modules) REUSE_MODULES=1 ;;
    *) echo "build-deb.sh: unknown option: $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

log() { printf 'build-deb: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

for tool in dpkg-deb node npm gzip; do
  command -v "$tool" >/dev/null 2>&1 || die "needs $tool (Debian: apt-get install dpkg nodejs npm gzip)"
done
[ -n "$VERSION" ] || VERSION=$(node -p 'require(process.argv[1]).version' "$SRC/package.json")
# A native package: no Debian revision, so no hyphen.
printf '%s' "$VERSION" | grep -Eq '^[0-9][A-Za-z0-9.+~]*$' ||
  die "not a usable version: $VERSION (digits, letters and . + ~, starting with a digit; no hyphen)"
MAINTAINER="${DEBFULLNAME:-the svr authors} <${DEBEMAIL:-svr@example.org}>"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/svr-deb.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
trap 'exit 1' INT TERM HUP

# --- the files: a copy of the checkout without node_modules, staged by install.sh -------------------
mkdir "$WORK/src"
tar -C "$SRC" --exclude=./.git --exclude=./node_modules --exclude=./dist --exclude=./test \
  --exclude=./state --exclude=./.bench -cf - . | tar -C "$WORK/src" -xf -
node -e '
  const fs = require("fs"), file = process.argv[1];
  const pkg = JSON.parse(fs.readFileSync(file, "utf8"));
  pkg.version = process.argv[2];
  fs.writeFileSync(file, JSON.stringify(pkg, null, 2) + "\n");' "$WORK/src/package.json" "$VERSION"

ROOT=$WORK/root
if [ -n "$REUSE_MODULES" ]; then
  # install.sh copies the production dependencies it finds complete at their locked versions (it
  # runs npm ci when they are not); the link lets it read the checkout's without copying the rest.
  [ ! -d "$SRC/node_modules" ] || ln -s "$SRC/node_modules" "$WORK/src/node_modules"
  WANT='production dependencies (copied from|installed with npm ci)'
else
  # No node_modules in the copy: install.sh runs npm ci --omit=dev into the staged /usr/lib/svr.
  WANT='npm ci --omit=dev'
fi
log "staging svr $VERSION with install.sh --destdir"
"$WORK/src/install.sh" --destdir "$ROOT" --node /usr/bin/node > "$WORK/install.log" 2>&1 ||
  { cat "$WORK/install.log" >&2; die "install.sh --destdir failed"; }
grep -Eq "$WANT" "$WORK/install.log" || die "install.sh did not say '$WANT'; its log: $(cat "$WORK/install.log")"

# The site and the state are made by postinst, not shipped: a package file would be deleted on
# remove, and the site is the admin's content.
rm -rf "${ROOT:?}/var"
# /etc/svr/mods holds the admin's mods: made by postinst, removed on purge, never a package file
# (dpkg would warn about it when a mod is in it on remove).
rm -rf "${ROOT:?}/etc/svr"
# apt-get remove/purge uninstall the package: uninstall.sh, and the record install.sh keeps of the
# default config for its .new files, would only work behind dpkg's back.
rm -f "$ROOT/usr/lib/svr/scripts/uninstall.sh" "$ROOT/usr/lib/svr/config/svr-config.installed.json"
# The bundled modules' development files (lint and CI configs, .github/): not needed to run, and
# lintian counts an ESLint config in a package as an error.
find "$ROOT/usr/lib/svr/node_modules" -mindepth 2 -name '.*' -prune -exec rm -rf {} +
# dpkg-statoverride (postinst) makes it root:svr 640.
chmod 644 "$ROOT/etc/svr-config.json"

# --- /usr/share/doc/svr: copyright and changelog ----------------------------------------------
DOC=$ROOT/usr/share/doc/svr
mkdir -p "$DOC"
node - "$SRC/LICENSE" "$ROOT/usr/lib/svr/node_modules" > "$DOC/copyright" <<'EOF'
'use strict';
// svr's license, then every bundled module with its version and license.
const fs = require('fs'), path = require('path');
const [license, modules] = process.argv.slice(2);
const lines = ['svr', '', 'Copyright: the svr authors', 'License: MIT', '',
  ...fs.readFileSync(license, 'utf8').trimEnd().split('\n').map((l) => (l ? `  ${l}` : '  .')), '',
  'Bundled Node.js modules in /usr/lib/svr/node_modules, each with its license text in its own',
  'directory:', ''];
const dirs = [];
for (const name of fs.readdirSync(modules).sort()) {
  if (name.startsWith('.')) continue;
  if (name.startsWith('@')) {
    for (const sub of fs.readdirSync(path.join(modules, name)).sort()) dirs.push(`${name}/${sub}`);
  } else dirs.push(name);
}
for (const dir of dirs) {
  const pkg = JSON.parse(fs.readFileSync(path.join(modules, dir, 'package.json'), 'utf8'));
  const lic = typeof pkg.license === 'string' ? pkg.license : (pkg.license && pkg.license.type) || 'see its directory';
  lines.push(`  ${pkg.name} ${pkg.version}: ${lic}`);
}
lines.push('', 'The GNU General Public License version 2, one of the licenses node-forge may be used',
  'under, is in /usr/share/common-licenses/GPL-2.');
process.stdout.write(lines.join('\n') + '\n');
EOF

if [ -n "${SOURCE_DATE_EPOCH:-}" ]; then
  DATE=$(LC_ALL=C date -u -R -d "@$SOURCE_DATE_EPOCH")
else
  DATE=$(LC_ALL=C date -u -R)
fi
{
  printf 'svr (%s) unstable; urgency=medium\n\n' "$VERSION"
  printf '  * svr %s. The changes are listed in /usr/lib/svr/CHANGELOG.md.\n\n' "$VERSION"
  printf ' -- %s  %s\n' "$MAINTAINER" "$DATE"
} | gzip -9n > "$DOC/changelog.gz"

# Root-owned (dpkg-deb --root-owner-group), world-readable, writable by root only.
find "$ROOT" -type d -exec chmod 755 {} +
find "$ROOT" -type f -exec chmod u+rw,go+r,go-w {} +

# --- DEBIAN/ -----------------------------------------------------------------------------------
mkdir "$ROOT/DEBIAN"
# Installed-Size as dpkg-gencontrol counts it: each file's KiB rounded up, 1 for every directory
# and link; unlike du, the same on every filesystem the package is built on.
SIZE=$(find "$ROOT" -mindepth 1 -path "$ROOT/DEBIAN" -prune -o -printf '%y %s\n' |
  awk '$1 == "f" { kib += int(($2 + 1023) / 1024); next } { kib += 1 } END { print kib }')
cat > "$ROOT/DEBIAN/control" <<EOF
Package: svr
Version: $VERSION
Architecture: all
Maintainer: $MAINTAINER
Installed-Size: $SIZE
Depends: nodejs (>= 20)
Section: httpd
Priority: optional
Description: clustered production web server for Node.js
 svr is a web server for Node.js in the spirit of SVR.JS: a primary process
 and its workers read /etc/svr-config.json, serve static files, run
 server-side JavaScript (serverSideScript.js) and mods, and reload without
 dropping requests.
 .
 This package runs it as the systemd service svr.service, as the system user
 svr, on port 80, serving /var/www/svr.
EOF
printf '%s\n' /etc/svr-config.json /etc/logrotate.d/svr > "$ROOT/DEBIAN/conffiles"
for script in postinst prerm postrm; do
  cp "$SRC/scripts/deb/$script" "$ROOT/DEBIAN/$script"
  chmod 755 "$ROOT/DEBIAN/$script"
done
chmod 644 "$ROOT/DEBIAN/control" "$ROOT/DEBIAN/conffiles"
(cd "$ROOT" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z | xargs -0 md5sum) \
  > "$ROOT/DEBIAN/md5sums"
chmod 644 "$ROOT/DEBIAN/md5sums"

mkdir -p "$OUT"
DEB=$OUT/svr_${VERSION}_all.deb
dpkg-deb --root-owner-group -Zxz --build "$ROOT" "$DEB" >/dev/null
# The two sizes docs/debian-package.md gives, from the package itself.
log "built $DEB: $(($(stat -c %s "$DEB") / 1024)) KiB, $SIZE KiB installed"
printf '%s\n' "$DEB"
