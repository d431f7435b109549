'use strict';
// How the server names itself: in the Server header, error-page footers and --version.

const os = require('node:os');
const path = require('node:path');
const { version } = require('../package.json');

// Where svr is installed: the directory holding svr.js (the default config, mods and state live there).
const INSTALL_DIR = path.resolve(__dirname, '..');

const PRODUCT = 'svr';

function osName() {
  const names = { linux: 'Linux', darwin: 'macOS', win32: 'Windows', freebsd: 'FreeBSD' };
  return names[process.platform] ?? os.type();
}

// `svr/1.2.3 (Linux; Node.js/v20.20.2)` when the version may be shown, else just `svr`.
function serverString(exposeVersion) {
  return exposeVersion ? versionString() : PRODUCT;
}

function versionString() {
  return `${PRODUCT}/${version} (${osName()}; Node.js/${process.version})`;
}

module.exports = { serverString, versionString, PRODUCT, version, INSTALL_DIR };
