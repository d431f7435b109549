'use strict';
// Where svr keeps what it makes itself: the self-signed certificate, the directory
// serverSideScript.js sees as __dirname (temp/), and the extracted legacy mods.
//
// config.stateDirectory, else $STATE_DIRECTORY (set by systemd's StateDirectory=, possibly a
// colon-separated list: the first one is ours), else state/ next to svr.js.

const path = require('node:path');
const { INSTALL_DIR } = require('./product');

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

// SVR.JS's temp/ directory: the script's __dirname, so `__dirname + "/../temp/x"` lands here.
function tempDirectory(config, env) {
  return path.join(stateDirectory(config, env), 'temp');
}

module.exports = { stateDirectory, tempDirectory };
