'use strict';
// Stage 4 of the pipeline: server-side JavaScript. Mods in file-name order, then
// serverSideScript.js, then (via next) the static stage.
//
//   createScriptingStage(site) -> null | scripting(req, res, next)
//     Loads the mods and compiles the script once (when a worker builds its pipeline, at start
//     and on a reload). Throws ModLoadError / ScriptLoadError naming the file. Returns null when
//     there is neither a mod nor a script, so the pipeline runs without this stage.
//     The stage function also carries, for the worker's listeners:
//     scripting.proxyRequest(req, res)        an absolute-form (forward proxy) request, or null
//                                             when no mod takes them (see below)
//     scripting.connect(req, socket, head)    a CONNECT request, or null when no mod has a proxy
//                                             handler (the listener then answers 501)
//   checkScriptingStage(site) -> null
//     What `svr check` and the primary do instead (pipeline/index.js checkPipeline): compile the
//     script without running any of it, throwing the same ScriptLoadError. No mod is loaded here:
//     the mods are loaded in a short-lived child process (mod-keys.js), never in the primary.
//
// What a request carries into user code is svrjs-api.js. Errors: a synchronous throw or a
// rejected promise of a mod, or a throw of the script, becomes a 500 for that request only (the
// mod's name/version goes to the error page footer when exposeModsInErrorPages is true).
// Callbacks that throw later are handled by request-context.js.
//
// Forgiving where SVR.JS was (forgiving.js): a second res.writeHead, or a write, end or
// setHeader after the response was sent, logs a warning naming the code and the URL and is
// ignored, instead of throwing in a callback and recycling the worker.
//
// Proxy requests, with SVR.JS's rules: an absolute-form request (GET http://host/...) is given
// only to the mods that say they take them (4.x `proxy` or `proxySafe: true`, legacy
// `proxyCallback`), with req.url left absolute and req.isProxy true; the rewrite map, custom
// headers and Basic auth do not apply (the worker routes it here before the pipeline); if they all
// pass it on, the answer is 501. Without such a mod it is served by path, as any request.
// CONNECT goes through the mods' proxy handlers in order; without one, or when they all pass it
// on, the answer is a bare 501.
//
// The stage's request path is stage.js, required only for a site that has user code.

const fs = require('node:fs');
const path = require('node:path');
const { loadMods } = require('./mods');
const { compileServerSideScript, compileScriptFactory, scriptPath } = require('./legacy-script');
const { installModEnvironment, svrFile } = require('./environment');
const { svrjsDirectories } = require('./legacy-config-files');
const { INSTALL_DIR, modsDirectory, stateDirectory } = require('../../product');

function createScriptingStage(site) {
  const { config, log } = site;
  // A --single-threaded reload loads the mods again in this process: if that fails, the old
  // pipeline keeps serving, and so must the message listeners its mods pushed.
  const listenersBefore = [...(process.messageEventListeners || [])];
  installModEnvironment({ stateDirectory: stateDirectory(config), svrFile: svrFile(), log });
  let mods;
  let script;
  const scriptFile = scriptPath(config, INSTALL_DIR);
  try {
    let notes;
    ({ mods, notes } = loadMods(modsDirectory(config), {
      required: typeof config.modsDirectory === 'string',
      stateDirectory: stateDirectory(config),
      // Asked only for a legacy archive: telling an SVR.JS config needs the whole schema.
      svrjsDirectories: () => svrjsDirectories({ configFile: site.configFile, config, root: site.root }),
    }));
    // Usually empty here: the process that read the mods' config keys at start met them first.
    for (const line of notes.infos) log.info(line);
    for (const line of notes.warnings) log.warn(line);
    script = compileServerSideScript(scriptFile, { dirname: scriptDirname(config, log), fallbackDir: path.dirname(scriptFile) });
  } catch (error) {
    process.messageEventListeners.splice(0, Infinity, ...listenersBefore);
    throw error;
  }
  if (mods.length === 0 && !script) return null;
  const loaded = mods.map((mod) => `${mod.label}${mod.legacy ? ' (legacy)' : ''}`);
  if (script) loaded.push(scriptFile);
  log.info(`server-side JavaScript: ${loaded.join(', ')}`);
  return require('./stage').createStage(site, mods, script);
}

function checkScriptingStage(site) {
  compileScriptFactory(scriptPath(site.config, INSTALL_DIR));
  return null;
}

// SVR.JS's temp/ (in the state directory): the script's __dirname, created if missing.
function scriptDirname(config, log) {
  const dir = path.join(stateDirectory(config), 'temp');
  try {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (error) {
    log.warn(`${dir}: cannot create serverSideScript.js's __dirname (${error.code || error.message}); files it writes there will fail`);
  }
  return dir;
}

module.exports = { createScriptingStage, checkScriptingStage };
