'use strict';
// How the server names itself: in the Server header, error-page footers and --version.

const os = require('node:os');
const { version } = require('../package.json');

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

module.exports = { serverString, versionString, PRODUCT, version };
