'use strict';
// Finds and loads mods from the mods directory, in file-name order (as SVR.JS does).
//
// What the directory may hold, and what svr does with each entry:
//   *.js, *.cjs                      a mod file (SVR.JS 4.x format), required
//   folder with package.json "main"  a mod (4.x), or with index.js
//   *.tar.gz, *.tgz                  a legacy (SVR.JS 3.x) mod: extracted (legacy-archive.js) into
//                                    <state>/temp/.modloader_w<pid>/<file name>/, then its
//                                    index.js is required
//   *.mjs                            an error: svr loads CommonJS only
//   anything else                    ignored, with one warning naming every ignored entry
// A 4.x mod exports its request handler:
//   module.exports = (req, res, logFacilities, config, next) => { ... };   // may be async
//   module.exports.modInfo = { name: 'example', version: '1.0.0' };
//   module.exports.configValidators = { exampleKey: (value) => typeof value === 'string' };
//   module.exports.proxy = (req, socket, head, logFacilities, config, next) => { ... };  // CONNECT
//   module.exports.proxySafe = true;   // the handler also gets absolute-form (proxy) requests
//   module.exports.commands = { name: (args, log, passCommand) => ... };   // listed, never run
// A legacy mod (archive or folder) exports a constructor whose prototype has callback() (and
// maybe proxyCallback()); its name and version come from mod.info. legacy-mods.js wraps it.
// A mod that cannot be loaded is a ModLoadError naming its file: the caller stops the start
// (or, on a reload, keeps the old workers).

const fs = require('node:fs');
const path = require('node:path');

const { DEFAULT_MODS_DIRECTORY, modsDirectory } = require('../../product');
// legacy-archive.js (zlib, tar) and legacy-mods.js (POST parsing, node:crypto) are required where
// a mod needs them: a site without mods never loads them.
const { adoptSvrjsConfigFiles, emptyFilesCreated } = require('./legacy-config-files');

const ARCHIVE = /\.(tar\.gz|tgz)$/;

class ModLoadError extends Error {
  constructor(file, message, cause) {
    super(`${file}: cannot load the mod: ${message}`);
    this.name = 'ModLoadError';
    this.file = file;
    if (cause) this.cause = cause;
  }
}

// The mods in `dir`, sorted by file name (JavaScript's default sort, as SVR.JS does):
// { mods: [{ file, entry?, archive? }], ignored: [name] }. A missing default directory means
// "no mods"; a missing configured one is an error (a typo, most likely).
function listMods(dir, { required = false } = {}) {
  let names;
  try {
    names = fs.readdirSync(dir);
  } catch (error) {
    if (error.code === 'ENOENT' && !required) return { mods: [], ignored: [] };
    throw new ModLoadError(dir, `cannot read the mods directory (${error.code || error.message})`, error);
  }
  const mods = [];
  const ignored = [];
  for (const name of names.sort()) {
    const file = path.join(dir, name);
    let stats;
    try {
      stats = fs.statSync(file);
    } catch (error) {
      throw new ModLoadError(file, error.code === 'ENOENT' ? 'a broken symbolic link' : error.message, error);
    }
    if (stats.isFile()) {
      if (/\.c?js$/.test(name)) mods.push({ file, entry: file });
      else if (ARCHIVE.test(name)) mods.push({ file, archive: true });
      else if (/\.mjs$/.test(name)) throw new ModLoadError(file, 'an ES module (.mjs): svr loads CommonJS mods (.js, .cjs) and SVR.JS .tar.gz mods');
      else ignored.push(name);
    } else if (stats.isDirectory()) {
      const entry = folderEntry(file);
      if (entry) mods.push({ file, entry });
      else ignored.push(`${name}/`);
    } else {
      ignored.push(name);
    }
  }
  return { mods, ignored };
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

// Where this process unpacks legacy archives: SVR.JS's temp/.modloader_w<n>/, one per process,
// removed when the process exits. Directories of processes that died without cleaning up are
// removed by the next process that extracts.
function extractionDirectory(stateDirectory) {
  const temp = path.join(stateDirectory, 'temp');
  const own = path.join(temp, `.modloader_w${process.pid}`);
  if (!extractionDirectory.registered) {
    extractionDirectory.registered = new Set();
    process.once('exit', () => {
      for (const dir of extractionDirectory.registered) fs.rmSync(dir, { recursive: true, force: true });
    });
  }
  if (!extractionDirectory.registered.has(own)) {
    fs.mkdirSync(temp, { recursive: true, mode: 0o700 });
    removeStaleExtractions(temp);
    extractionDirectory.registered.add(own);
  }
  return own;
}

function removeStaleExtractions(temp) {
  for (const name of fs.readdirSync(temp)) {
    const match = /^\.modloader_w(\d+)$/.exec(name);
    if (!match || Number(match[1]) === process.pid) continue;
    try {
      process.kill(Number(match[1]), 0);
    } catch (error) {
      if (error.code === 'ESRCH') fs.rmSync(path.join(temp, name), { recursive: true, force: true });
    }
  }
}

// Forgets what an earlier load of this mod put in require's cache, so a reload in the same
// process (--single-threaded) sees the new code.
function forget(entry, folder) {
  for (const key of Object.keys(require.cache)) {
    if (key === entry || (folder && key.startsWith(folder + path.sep))) delete require.cache[key];
  }
}

function unpack(mod, stateDirectory) {
  if (!stateDirectory) throw new ModLoadError(mod.file, 'no state directory to extract the archive into');
  const into = path.join(extractionDirectory(stateDirectory), path.basename(mod.file));
  try {
    require('./legacy-archive').extractModArchive(mod.file, into);
  } catch (error) {
    throw new ModLoadError(mod.file, error.message, error);
  }
  const entry = path.join(into, 'index.js');
  if (!fs.existsSync(entry)) throw new ModLoadError(mod.file, 'the archive has no index.js at its top level');
  return { entry, folder: into };
}

// mod.info of a legacy mod: { name, version }, or null with the reason.
function readModInfo(folder) {
  try {
    const info = JSON.parse(fs.readFileSync(path.join(folder, 'mod.info'), 'utf8'));
    if (info && typeof info.name === 'string' && info.name !== '') return { info };
    return { info: null, reason: 'mod.info has no "name"' };
  } catch (error) {
    return { info: null, reason: error.code === 'ENOENT' ? 'no mod.info' : `mod.info: ${error.message}` };
  }
}

function requireMod(mod, { stateDirectory } = {}) {
  let entry = mod.entry;
  let folder = mod.file === mod.entry ? null : mod.file;
  if (mod.archive) ({ entry, folder } = unpack(mod, stateDirectory));
  forget(entry, folder);
  let exported;
  try {
    exported = require(entry);
  } catch (error) {
    throw new ModLoadError(mod.file, `${describeError(error)}${thrownAt(error, folder || entry)}`, error);
  }
  if (require('./legacy-mods').isLegacyModConstructor(exported)) return legacyMod(mod, exported, folder);
  if (mod.archive) {
    throw new ModLoadError(mod.file, `index.js must export a constructor with prototype.callback (SVR.JS's legacy format), found ${describeValue(exported)}`);
  }
  if (typeof exported !== 'function') {
    throw new ModLoadError(mod.file, `it must export a function (req, res, logFacilities, config, next), found ${describeValue(exported)}`);
  }
  checkValidators(mod, exported.configValidators);
  if (exported.proxy !== undefined && typeof exported.proxy !== 'function') {
    throw new ModLoadError(mod.file, `proxy must be a function (req, socket, head, logFacilities, config, next), found ${describeValue(exported.proxy)}`);
  }
  const info = exported.modInfo;
  const hasInfo = Boolean(info && typeof info === 'object' && typeof info.name === 'string' && info.name !== '');
  const name = hasInfo ? info.name : path.basename(mod.file).replace(/\.c?js$/, '');
  const version = hasInfo && info.version !== undefined ? String(info.version) : 'unknown';
  return describeMod(mod, exported, { name, version, hasInfo, legacy: false });
}

function legacyMod(mod, Mod, folder) {
  const { info, reason } = readModInfo(folder || path.dirname(mod.file));
  const name = info ? info.name : path.basename(mod.file).replace(ARCHIVE, '').replace(/\.c?js$/, '');
  const version = info && info.version !== undefined ? String(info.version) : 'unknown';
  let handler;
  try {
    handler = require('./legacy-mods').wrapLegacyMod(Mod, `${name}/${version}`);
  } catch (error) {
    throw new ModLoadError(mod.file, `new Mod() failed: ${describeError(error)}`, error);
  }
  return describeMod(mod, handler, { name, version, hasInfo: Boolean(info), infoProblem: reason, legacy: true });
}

function describeMod(mod, handler, { name, version, hasInfo, infoProblem, legacy }) {
  const commands = handler.commands && typeof handler.commands === 'object' ? Object.keys(handler.commands) : [];
  return {
    file: mod.file,
    handler,
    proxy: typeof handler.proxy === 'function' ? handler.proxy : null,
    // 4.x: proxySafe true, or a proxy handler, lets absolute-form requests reach the handler;
    // a legacy mod's callback gets them when it has a proxyCallback (as in SVR.JS).
    proxySafe: handler.proxySafe === true || typeof handler.proxy === 'function',
    name,
    version,
    label: `${name}/${version}`,
    hasInfo,
    infoProblem,
    legacy,
    commands,
    configValidators: (!legacy && handler.configValidators) || {},
  };
}

function checkValidators(mod, validators) {
  if (validators === undefined || validators === null) return;
  if (typeof validators !== 'object') throw new ModLoadError(mod.file, `configValidators must be an object, found ${describeValue(validators)}`);
  for (const [key, validator] of Object.entries(validators)) {
    if (typeof validator !== 'function') throw new ModLoadError(mod.file, `configValidators.${key} must be a function, found ${describeValue(validator)}`);
  }
}

// Loads every mod of `dir` in name order: { mods, ignored, notes: { infos, warnings } }. Throws a
// ModLoadError for the first one that fails. options: { required, stateDirectory, svrjsDirectories }
// (svrjsDirectories: where SVR.JS kept the legacy mods' settings files, legacy-config-files.js;
// [dir], or a function returning them, called only when a legacy archive is among the mods).
function loadMods(dir, options = {}) {
  const { mods, ignored } = listMods(dir, options);
  const { notes, load } = legacySettings(mods, options);
  return { mods: mods.map(load), ignored, notes };
}

// The same, going on past a mod that fails, for a report of every one (svr check, through
// mod-keys-child.js): { mods, ignored, notes, errors: [ModLoadError] }. A directory that cannot be
// listed still throws.
function loadEveryMod(dir, options = {}) {
  const { mods, ignored } = listMods(dir, options);
  const { notes, load } = legacySettings(mods, options);
  const loaded = [];
  const errors = [];
  for (const mod of mods) {
    try {
      loaded.push(load(mod));
    } catch (error) {
      if (!(error instanceof ModLoadError)) throw error;
      errors.push(error);
    }
  }
  return { mods: loaded, ignored, notes, errors };
}

// Legacy archives read their settings file from the state directory: before they load, the files
// SVR.JS kept elsewhere are copied there; load(mod) requires a mod and notes an empty settings
// file it created. -> { notes: { infos, warnings }, load }
function legacySettings(mods, options) {
  const notes = { infos: [], warnings: [] };
  const state = options.stateDirectory;
  const watched = Boolean(state) && mods.some((mod) => mod.archive);
  if (watched) {
    const dirs = typeof options.svrjsDirectories === 'function' ? options.svrjsDirectories() : options.svrjsDirectories;
    const adopted = adoptSvrjsConfigFiles(state, dirs || []);
    notes.infos.push(...adopted.infos);
    notes.warnings.push(...adopted.warnings);
  }
  const load = (mod) => {
    if (!watched || !mod.archive) return requireMod(mod, options);
    const { value, created } = emptyFilesCreated(state, () => requireMod(mod, options));
    for (const file of created) {
      notes.warnings.push(`${mod.file}: the mod created ${file} with no settings in it, so it runs unconfigured; ` +
        'put its settings there and reload (SVR.JS kept this file next to its svr.js)');
    }
    return value;
  };
  return { notes, load };
}

// Documentation kept beside the mods (svr ships mods/README.md): named in an info line only.
const DOCUMENTATION = /^(readme|license|licence|changelog)([.-].*)?$|\.(md|txt)$/i;

// The lines to log about what was loaded: { infos, warnings }. Every ignored entry is named:
// documentation in an info line, anything else in a warning; also mods without name/version and
// console commands svr cannot offer.
function loadReport(dir, { mods, ignored, notes = { infos: [], warnings: [] } }) {
  const infos = [...notes.infos];
  const warnings = [...notes.warnings];
  const docs = ignored.filter((name) => DOCUMENTATION.test(name));
  const others = ignored.filter((name) => !DOCUMENTATION.test(name));
  if (docs.length) infos.push(`${dir}: ${docs.join(', ')}: documentation, not mods`);
  if (others.length) {
    warnings.push(`${dir}: ignored ${others.join(', ')} (not a mod: mods are *.js, *.cjs, *.tar.gz files and folders with index.js or package.json "main")`);
  }
  for (const mod of mods) {
    if (mod.legacy && !mod.hasInfo) warnings.push(`${mod.file}: ${mod.infoProblem}; calling it ${mod.label}`);
    else if (!mod.hasInfo) warnings.push(`${mod.file}: exports no modInfo {name, version}; calling it ${mod.label}`);
    if (mod.commands.length) warnings.push(`${mod.file}: console commands ${mod.commands.join(', ')} are not available (svr has no console)`);
  }
  return { infos, warnings };
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

// " (at /mods/a.js:3)": the mod's own line that threw while loading, from the stack (a
// SyntaxError already says where).
function thrownAt(error, modPath) {
  if (!(error instanceof Error) || error instanceof SyntaxError || typeof error.stack !== 'string') return '';
  for (const frame of error.stack.split('\n').slice(1)) {
    const match = /\(?(\/[^()]*?):(\d+):\d+\)?$/.exec(frame.trim());
    if (match && (match[1] === modPath || match[1].startsWith(modPath + path.sep))) return ` (at ${match[1]}:${match[2]})`;
  }
  return '';
}

function describeValue(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

module.exports = {
  listMods, loadMods, loadEveryMod, loadReport, modsDirectory, describeError,
  ModLoadError, DEFAULT_MODS_DIRECTORY,
};
