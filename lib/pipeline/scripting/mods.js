'use strict';
// Finds and loads mods (SVR.JS 4.x format) from the mods directory, in file-name order.
//
// A mod is a `*.js` / `*.cjs` file, or a folder with an `index.js` or a package.json `main`.
// Everything else in the directory (README.md, dotfiles, *.mjs, ...) is ignored. A mod module
// exports its request handler and describes itself:
//   module.exports = (req, res, logFacilities, config, next) => { ... };   // may be async
//   module.exports.modInfo = { name: 'example', version: '1.0.0' };
//   module.exports.configValidators = { exampleKey: (value) => typeof value === 'string' };
// A mod that cannot be loaded is a ModLoadError naming its file: the caller stops the start
// (or, on a reload, keeps the old workers).

const fs = require('node:fs');
const path = require('node:path');

const { DEFAULT_MODS_DIRECTORY, modsDirectory } = require('../../product');

class ModLoadError extends Error {
  constructor(file, message, cause) {
    super(`${file}: cannot load the mod: ${message}`);
    this.name = 'ModLoadError';
    this.file = file;
    if (cause) this.cause = cause;
  }
}

// The mods in `dir`, sorted by file name (JavaScript's default sort, as SVR.JS does), each as
// { file: what was found in the directory, entry: the file to require }. A missing default
// directory means "no mods"; a missing configured one is an error (a typo, most likely).
function listMods(dir, { required = false } = {}) {
  let names;
  try {
    names = fs.readdirSync(dir);
  } catch (error) {
    if (error.code === 'ENOENT' && !required) return [];
    throw new ModLoadError(dir, `cannot read the mods directory (${error.code || error.message})`, error);
  }
  const mods = [];
  for (const name of names.sort()) {
    if (name.startsWith('.')) continue;
    const file = path.join(dir, name);
    let stats;
    try {
      stats = fs.statSync(file);
    } catch (error) {
      throw new ModLoadError(file, error.code === 'ENOENT' ? 'a broken symbolic link' : error.message, error);
    }
    if (stats.isFile()) {
      if (/\.c?js$/.test(name)) mods.push({ file, entry: file });
    } else if (stats.isDirectory()) {
      const entry = folderEntry(file);
      if (entry) mods.push({ file, entry });
    }
  }
  return mods;
}

// A folder is a mod when it has a package.json with "main" or an index.js.
function folderEntry(dir) {
  const manifest = path.join(dir, 'package.json');
  if (fs.existsSync(manifest)) {
    let main;
    try {
      main = JSON.parse(fs.readFileSync(manifest, 'utf8')).main;
    } catch (error) {
      throw new ModLoadError(manifest, `invalid package.json: ${error.message}`, error);
    }
    if (typeof main === 'string' && main !== '') {
      try {
        return require.resolve(path.resolve(dir, main));
      } catch (error) {
        throw new ModLoadError(dir, `package.json "main" (${main}) cannot be found`, error);
      }
    }
  }
  const index = path.join(dir, 'index.js');
  return fs.existsSync(index) ? index : null;
}

// Forgets what an earlier load of this mod put in require's cache, so a reload in the same
// process (the primary reading configValidators again, --single-threaded) sees the new code.
function forget(mod) {
  const folder = mod.file === mod.entry ? null : mod.file + path.sep;
  for (const key of Object.keys(require.cache)) {
    if (key === mod.entry || (folder && key.startsWith(folder))) delete require.cache[key];
  }
}

function requireMod(mod) {
  forget(mod);
  let exported;
  try {
    exported = require(mod.entry);
  } catch (error) {
    throw new ModLoadError(mod.file, describeError(error), error);
  }
  if (typeof exported !== 'function') {
    throw new ModLoadError(mod.file, `it must export a function (req, res, logFacilities, config, next), found ${describeValue(exported)}`);
  }
  const validators = exported.configValidators;
  if (validators !== undefined && validators !== null) {
    if (typeof validators !== 'object') throw new ModLoadError(mod.file, `configValidators must be an object, found ${describeValue(validators)}`);
    for (const [key, validator] of Object.entries(validators)) {
      if (typeof validator !== 'function') throw new ModLoadError(mod.file, `configValidators.${key} must be a function, found ${describeValue(validator)}`);
    }
  }
  const info = exported.modInfo;
  const hasInfo = info && typeof info === 'object' && typeof info.name === 'string' && info.name !== '';
  const name = hasInfo ? info.name : path.basename(mod.file).replace(/\.c?js$/, '');
  const version = hasInfo && info.version !== undefined ? String(info.version) : 'unknown';
  return {
    file: mod.file,
    handler: exported,
    name,
    version,
    label: `${name}/${version}`,
    hasInfo,
    configValidators: validators || {},
  };
}

// Loads every mod of `dir` in name order. Throws a ModLoadError for the first one that fails.
function loadMods(dir, options) {
  return listMods(dir, options).map(requireMod);
}

// What the primary needs before it validates the config: the keys the mods declare.
// Returns { validators, errors } (errors: strings naming the mod file).
function collectConfigValidators(dir, options) {
  const validators = {};
  try {
    for (const mod of loadMods(dir, options)) Object.assign(validators, mod.configValidators);
  } catch (error) {
    if (!(error instanceof ModLoadError)) throw error;
    return { validators, errors: [error.message] };
  }
  return { validators, errors: [] };
}

// The primary validates the config before any worker exists, and the config names the mods
// directory: read that one key from the raw file (loadConfig reports what is wrong with it).
function modsDirectoryOfConfigFile(configFile) {
  let raw;
  try {
    raw = JSON.parse(fs.readFileSync(configFile, 'utf8').replace(/^\uFEFF/, ''));
  } catch {
    return { dir: DEFAULT_MODS_DIRECTORY, required: false };
  }
  const value = raw && typeof raw === 'object' ? raw.modsDirectory : undefined;
  if (typeof value !== 'string' || value === '') return { dir: DEFAULT_MODS_DIRECTORY, required: false };
  return { dir: path.resolve(path.dirname(configFile), value), required: true };
}

// { validators, errors } for the config file's mods directory.
function readModValidators(configFile) {
  const { dir, required } = modsDirectoryOfConfigFile(configFile);
  return collectConfigValidators(dir, { required });
}

function describeError(error) {
  if (!(error instanceof Error)) return String(error);
  // A SyntaxError's first stack line is "file:line" and the offending source: keep them.
  if (error instanceof SyntaxError && typeof error.stack === 'string') {
    const lines = error.stack.split('\n');
    const at = lines.findIndex((line) => line.startsWith('SyntaxError'));
    if (at > 0 && /:\d+$/.test(lines[0])) return `${error.name}: ${error.message} (at ${lines[0]})`;
  }
  return `${error.name}: ${error.message}`;
}

function describeValue(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

module.exports = {
  loadMods, readModValidators, modsDirectory, describeError,
  ModLoadError,
};
