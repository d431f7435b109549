'use strict';
// The settings files of legacy (.tar.gz) mods. Such a mod reads a file beside SVR.JS's svr.js,
// e.g. reverse-proxy-mod: __dirname + "/../../../reverse-proxy-config.json", and writes "{}" there
// when there is none. svr unpacks archives into <state>/temp/.modloader_w<pid>/<file>/, so the
// file is read from the state directory; a moved site has it next to its old SVR.JS install,
// and the mod would silently run with no settings.
//
//   svrjsDirectories({ configFile, config, root }) -> [dir]: where SVR.JS kept these files: the
//       directory of an SVR.JS config (SVR.JS's config.json lives in its install directory; a
//       symbolic link such as /etc/svrjs-config.json is followed), and a web root that is an
//       SVR.JS install (the portable layout)
//   adoptSvrjsConfigFiles(stateDirectory, dirs) -> { infos, warnings }: before the mods load, each
//       "*-config.json" found there is copied into the state directory when that has none, or only
//       an empty one ({}, what a mod writes when it finds nothing); a different file already in the
//       state directory is kept (never overwritten) and named in a warning. The copy keeps the
//       file's permission bits. svr --check (often run as root) copies nothing.
//   emptyFilesCreated(stateDirectory, load) -> { value, created }: runs load() and names the
//       "*-config.json" files it left in the state directory that were not there before and hold
//       nothing ({} or blank): a mod that found no settings

const fs = require('node:fs');
const path = require('node:path');
const { isSvrjsConfig } = require('../../config/svrjs-keys');
const { isSvrjsInstall, realOrSelf } = require('../../config/sensitive-files');

const SETTINGS_FILE = /^[^.].*-config\.json$/;

function svrjsDirectories({ configFile, config, root }) {
  const dirs = [];
  if (configFile && isSvrjsConfig(config)) dirs.push(path.dirname(realOrSelf(configFile)));
  if (root && isSvrjsInstall(root)) dirs.push(realOrSelf(root));
  return [...new Set(dirs)];
}

function isEmptySettings(text) {
  const trimmed = text.trim();
  if (trimmed === '') return true;
  try {
    const value = JSON.parse(trimmed);
    return value !== null && typeof value === 'object' && Object.keys(value).length === 0;
  } catch {
    return false;
  }
}

function readText(file) {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

function settingsFiles(dir) {
  try {
    return fs.readdirSync(dir, { withFileTypes: true }).filter((entry) => entry.isFile() && SETTINGS_FILE.test(entry.name)).map((entry) => entry.name);
  } catch {
    return [];
  }
}

function adoptSvrjsConfigFiles(stateDirectory, dirs) {
  const infos = [];
  const warnings = [];
  const state = realOrSelf(stateDirectory);
  for (const dir of dirs) {
    if (dir === state) continue;
    for (const name of settingsFiles(dir)) {
      const source = path.join(dir, name);
      const target = path.join(state, name);
      const wanted = readText(source);
      if (wanted === null) continue;
      const mode = fs.statSync(source).mode & 0o777; // a file of secrets stays as private as it was
      const present = readText(target);
      if (present === wanted) continue;
      if (present !== null && !isEmptySettings(present)) {
        warnings.push(`legacy mods: ${target} is used; ${source}, where SVR.JS kept it, differs and is not read`);
        continue;
      }
      try {
        fs.mkdirSync(state, { recursive: true });
        const temporary = `${target}.${process.pid}.tmp`;
        fs.writeFileSync(temporary, wanted, { mode });
        fs.chmodSync(temporary, mode); // whatever the umask
        fs.renameSync(temporary, target); // whole or not at all, whichever process copies first
        infos.push(`legacy mods: ${name} copied from ${dir} (where SVR.JS kept it) to ${state}, where the mods read it`);
      } catch (error) {
        warnings.push(`legacy mods: cannot copy ${source} to ${target} (${error.code || error.message}); the mods will not see it`);
      }
    }
  }
  return { infos, warnings };
}

function emptyFilesCreated(stateDirectory, load) {
  const before = new Set(settingsFiles(stateDirectory));
  const value = load();
  const created = settingsFiles(stateDirectory)
    .filter((name) => !before.has(name))
    .map((name) => path.join(stateDirectory, name))
    .filter((file) => isEmptySettings(readText(file) ?? 'x'));
  return { value, created };
}

module.exports = { svrjsDirectories, adoptSvrjsConfigFiles, emptyFilesCreated, isEmptySettings };
