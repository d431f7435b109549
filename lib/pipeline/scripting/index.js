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
// The functions below take the stage's state `s` (createStage), built once per pipeline.

const fs = require('node:fs');
const path = require('node:path');
const { loadMods } = require('./mods');
const { compileServerSideScript, compileScriptFactory, scriptPath, SCRIPT_NAME } = require('./legacy-script');
const { legacyArguments } = require('./legacy-mods');
const { setBodyBudget } = require('./post-data');
const { armScriptTimeout } = require('./timeout');
const { installModEnvironment, svrFile } = require('./environment');
const { svrjsDirectories } = require('./legacy-config-files');
const { createLogFacilities, createForgiving, decorate, errorFunction, fail, passOn } = require('./svrjs-api');
const { headersFor } = require('../site');
const { BARE_501 } = require('../../http/headers');
const { requestContext, runUserCode, describeError } = require('../../request-context');
const { version, INSTALL_DIR, modsDirectory, stateDirectory } = require('../../product');

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
      svrjsDirectories: svrjsDirectories({ configFile: site.configFile, config, root: site.root }),
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
  return createStage(site, mods, script);
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

function createStage(site, mods, script) {
  const { config, log } = site;
  setBodyBudget(config.maxPostDataInFlight); // bodies buffered at once by this worker's requests
  const s = {
    config,
    log,
    sendError: site.sendError,
    authenticate: site.authenticate,
    head: site.headFoot.head.toString('utf8'), // read once by site.js
    foot: site.headFoot.foot.toString('utf8'),
    limit: config.maxPostDataSize,
    warned: new Set(),
    mods,
    script,
    proxyMods: mods.filter((mod) => mod.proxySafe),
    connectMods: mods.filter((mod) => mod.proxy),
    modLogs: mods.map((mod) => createLogFacilities(log, mod.label)),
    scriptLog: createLogFacilities(log, SCRIPT_NAME),
    forgiving: createForgiving(log),
    sharedConfig: sharedConfigFor(site),
  };
  process.serverConfig = s.sharedConfig;

  function scripting(req, res, next) {
    return withUser(s, req, res, () => runUserCode(userCodeState(s, req, res), run, s, req, res, next));
  }
  scripting.proxyRequest = s.proxyMods.length === 0 ? null : function proxyRequest(req, res) {
    return withUser(s, req, res, () => runUserCode(userCodeState(s, req, res), runProxy, s, req, res));
  };
  scripting.connect = s.connectMods.length === 0 ? null : (req, socket, head) => connect(s, req, socket, head);
  return scripting;
}

// One config object per worker, shared by every mod and the script (as SVR.JS 3.x did), and
// process.serverConfig: the SVR.JS keys svr reads, under their SVR.JS names, with the schema's
// defaults applied (users [], page404 "404.html", ...).
function sharedConfigFor(site) {
  // The configured headers (Server first) with SVR.JS's {path} filled in for this request.
  const customHeaders = (req) => headersFor(site, req ? req.url : '{path}');
  return Object.assign({}, site.config, {
    version,
    productName: 'svr',
    getCustomHeaders() {
      const store = requestContext.getStore();
      return customHeaders(store && store.req);
    },
    generateServerString: () => site.serverName,
  });
}

// What request-context.js needs to answer for a request whose user code crashed.
function userCodeState(s, req, res) {
  return { req, res, fail: (error) => fail(s, req, res, 500, { error }) };
}

function runMod(s, index, req, res, next) {
  const mod = s.mods[index];
  const failed = (error) => fail(s, req, res, 500, { extName: mod.label, error });
  res.error = errorFunction(s, req, res, mod.label);
  s.forgiving.speaking(res, mod.label);
  let result;
  try {
    result = mod.handler(req, res, s.modLogs[index], s.sharedConfig, next);
  } catch (error) {
    failed(error);
    return;
  }
  if (result && typeof result.then === 'function') result.then(undefined, failed);
}

function runScript(s, req, res, next) {
  const elseCallback = passOn(s, res, SCRIPT_NAME, next);
  res.error = errorFunction(s, req, res);
  s.forgiving.speaking(res, SCRIPT_NAME);
  try {
    s.script(...legacyArguments(req, res, s.scriptLog, s.sharedConfig, elseCallback, s.limit));
  } catch (error) {
    fail(s, req, res, 500, { error });
  }
}

// The mods in order, then the script, then next(); scriptTimeout watches whoever has the request.
function run(s, req, res, next) {
  decorate(s, req, res);
  const { mods, config, log } = s;
  let index = 0;
  let who = null; // the mod or script that has the request, for scriptTimeout's log line
  const disarm = armScriptTimeout(res, config.scriptTimeout, () => who, (name) => {
    log.error(`${name} did not answer ${req.method} ${req.url} within scriptTimeout (${config.scriptTimeout} ms): 504`);
    fail(s, req, res, 504, { extName: name });
  });
  const passed = () => { disarm(); next(); };
  const step = () => {
    if (index < mods.length) {
      const current = index++;
      who = mods[current].label;
      runMod(s, current, req, res, passOn(s, res, mods[current].label, step));
    } else if (s.script) {
      who = SCRIPT_NAME;
      runScript(s, req, res, passed);
    } else {
      passed();
    }
  };
  step();
}

// Absolute-form requests: only the mods that take proxy requests, then 501.
function runProxy(s, req, res) {
  decorate(s, req, res, { isProxy: true });
  let index = 0;
  const step = () => {
    if (index < s.proxyMods.length) {
      const mod = s.proxyMods[index++];
      runMod(s, s.mods.indexOf(mod), req, res, passOn(s, res, mod.label, step));
    } else {
      fail(s, req, res, 501);
    }
  };
  step();
}

function withUser(s, req, res, go) {
  if (s.authenticate && req.headers.authorization !== undefined) {
    return s.authenticate(req).then(({ user, throttled, retryAfter }) => {
      req.svr.user = user;
      req.authUser = user;
      // Too many failures from this address: nothing was checked; whatever the script answers
      // (its own 401, typically) tells the client when to try again.
      if (throttled) res.setHeader('Retry-After', String(retryAfter));
      go();
    });
  }
  go();
  return undefined;
}

// CONNECT: the mods' proxy handlers in order, then a bare 501.
function connect(s, req, socket, head) {
  socket.on('error', () => {}); // a client gone mid-tunnel is not the worker's problem
  req.isProxy = true;
  let index = 0;
  const step = () => {
    if (index >= s.connectMods.length) {
      if (!socket.destroyed) socket.end(BARE_501);
      return;
    }
    const mod = s.connectMods[index++];
    const logFacilities = s.modLogs[s.mods.indexOf(mod)];
    let done = false;
    const next = () => {
      if (done) return;
      done = true;
      step();
    };
    try {
      mod.proxy(req, socket, head, logFacilities, s.sharedConfig, next);
    } catch (error) {
      s.log.error(`${mod.label}: its proxy handler threw for CONNECT ${req.url}: ${describeError(error)}`);
      if (!socket.destroyed) socket.end('HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
    }
  };
  const state = { req, res: { headersSent: true }, fail: () => { if (!socket.destroyed) socket.destroy(); } };
  requestContext.run(state, step);
}

module.exports = { createScriptingStage, checkScriptingStage };
