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

// The first directory of a colon-separated list systemd sets ($STATE_DIRECTORY, ...), or null.
function systemdDirectory(value) {
  const first = (value || '').split(':')[0];
  return first ? path.resolve(first) : null;
}

// Where mods are when the config does not say: mods/ in $CONFIGURATION_DIRECTORY (set by
// systemd's ConfigurationDirectory=: /etc/svr/mods for the installed service, the admin's, apart
// from the code an upgrade or an uninstall replaces), else mods/ next to svr.js. Read once, at load.
function defaultModsDirectory(env = process.env) {
  const configDir = systemdDirectory(env.CONFIGURATION_DIRECTORY);
  return configDir ? path.join(configDir, 'mods') : path.join(INSTALL_DIR, 'mods');
}
const DEFAULT_MODS_DIRECTORY = defaultModsDirectory();

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
  return systemdDirectory(env.STATE_DIRECTORY) ?? path.join(INSTALL_DIR, 'state');
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

const inside = (dir, file) => !path.relative(dir, file).startsWith('..');

// A config outside svr's own directory that leaves mods or state to the defaults next to svr.js:
// the line that says so at start (the defaults are not next to the config), else null. No config
// file (svr serve): nothing to be next to.
function defaultDirectoriesNote(config, configFile) {
  if (!configFile || inside(INSTALL_DIR, configFile)) return null;
  const used = [];
  if (typeof config.modsDirectory !== 'string' && inside(INSTALL_DIR, DEFAULT_MODS_DIRECTORY)) used.push(`mods from ${DEFAULT_MODS_DIRECTORY}`);
  const state = stateDirectory(config);
  if (inside(INSTALL_DIR, state)) used.push(`state in ${state}`);
  if (used.length === 0) return null;
  return `${used.join(', ')}: the defaults next to svr.js, not next to ${configFile} ` +
    '(set "modsDirectory" and "stateDirectory" in the config for directories of its own)';
}

module.exports = {
  PRODUCT, version, serverString, versionString,
  INSTALL_DIR, DEFAULT_CONFIG_FILE, DEFAULT_MODS_DIRECTORY, defaultModsDirectory, stateDirectory, modsDirectory,
  defaultDirectoriesNote, proxyCacheDirectory,
};
