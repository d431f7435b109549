'use strict';
// What svr is and where it lives: its name and version (the Server header, page footers,
// --version) and the install directory with the default config, mods and state paths. Computed
// once at load; every other module asks here instead of working it out again.

const os = require('node:os');
const path = require('node:path');
const { version } = require('../package.json');

const PRODUCT = 'svr';

// The directory holding svr.js.
const INSTALL_DIR = path.resolve(__dirname, '..');
const DEFAULT_CONFIG_FILE = path.join(INSTALL_DIR, 'config', 'svr-config.json');
const DEFAULT_MODS_DIRECTORY = path.join(INSTALL_DIR, 'mods');

function osName() {
  const names = { linux: 'Linux', darwin: 'macOS', win32: 'Windows', freebsd: 'FreeBSD' };
  return names[process.platform] ?? os.type();
}

const VERSION_STRING = `${PRODUCT}/${version} (${osName()}; Node.js/${process.version})`;

// `svr/1.2.3 (Linux; Node.js/v20.20.2)` when the version may be shown, else just `svr`.
function serverString(exposeVersion) {
  return exposeVersion ? VERSION_STRING : PRODUCT;
}

function versionString() {
  return VERSION_STRING;
}

// Where svr keeps what it makes itself (the self-signed certificate): config.stateDirectory,
// else $STATE_DIRECTORY (set by systemd's StateDirectory=, possibly a colon-separated list: the
// first one is ours), else state/ next to svr.js.
function stateDirectory(config, env = process.env) {
  if (config && typeof config.stateDirectory === 'string' && config.stateDirectory !== '') {
    return path.resolve(config.stateDirectory);
  }
  if (env.STATE_DIRECTORY) {
    const first = env.STATE_DIRECTORY.split(':')[0];
    if (first) return path.resolve(first);
  }
  return path.join(INSTALL_DIR, 'state');
}

// The reverse proxy's response cache: a folder of the state directory that svr alone writes
// (the primary empties it at start), never one a config could point elsewhere.
function proxyCacheDirectory(config) {
  return path.join(stateDirectory(config), 'proxy-cache');
}

// The mods directory a loaded config names (absolute after loading), else the default one.
function modsDirectory(config) {
  return config && typeof config.modsDirectory === 'string' ? config.modsDirectory : DEFAULT_MODS_DIRECTORY;
}

module.exports = {
  PRODUCT, version, serverString, versionString,
  INSTALL_DIR, DEFAULT_CONFIG_FILE, DEFAULT_MODS_DIRECTORY, stateDirectory, modsDirectory,
  proxyCacheDirectory,
};
