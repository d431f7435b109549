'use strict';
// Files no web root may publish, by real path:
//   sensitiveFiles(root, { configFile, tlsFiles, stateDirectory }) -> [{ what, file }] inside root
//   backupCopies(file) -> the names editors and admins leave beside a file: file~, file.bak,
//                         file.orig, file.swp, .file.swp (vim), .#file (emacs lock), #file# (emacs)
//   isSvrjsInstall(dir): an old SVR.JS install directory (svr.js or svr.compressed, config.json)
// config/ uses the first to refuse a start; the pipeline's site.js protects all of them.

const fs = require('node:fs');
const path = require('node:path');

function realOrSelf(p) {
  try { return fs.realpathSync(p); } catch { return path.resolve(p); }
}

function isInside(root, file) {
  return file === root || file.startsWith(root === path.sep ? root : root + path.sep);
}

function sensitiveFiles(root, { configFile, tlsFiles = [], stateDirectory = null }) {
  const realRoot = realOrSelf(root);
  const named = [
    configFile && { what: 'the config file', file: configFile },
    ...tlsFiles.map((file) => ({ what: 'the TLS file', file })),
    stateDirectory && { what: 'the state directory', file: stateDirectory },
  ].filter(Boolean);
  return named.map(({ what, file }) => ({ what, file: realOrSelf(file) }))
    .filter(({ file }) => isInside(realRoot, file));
}

function backupCopies(file) {
  const dir = path.dirname(file);
  const base = path.basename(file);
  return [`${file}~`, `${file}.bak`, `${file}.orig`, `${file}.swp`,
    path.join(dir, `.${base}.swp`), path.join(dir, `.#${base}`), path.join(dir, `#${base}#`)];
}

// An old SVR.JS install directory: svr.js (or svr.compressed) with config.json beside it.
function isSvrjsInstall(dir) {
  return fs.existsSync(path.join(dir, 'config.json')) &&
    (fs.existsSync(path.join(dir, 'svr.js')) || fs.existsSync(path.join(dir, 'svr.compressed')));
}

module.exports = { sensitiveFiles, backupCopies, isSvrjsInstall, realOrSelf };
