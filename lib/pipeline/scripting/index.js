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
// A request gets, before the first mod runs: req.parsedURL, req.originalParsedURL (frozen
// url.parse-style objects with a `query` object), req.authUser (SVR.JS's name for req.svr.user),
// req.isProxy, req.rewriteURL(url, callback);
// res.error(code[, extName][, error][, headers]), res.redirect(dest[, isTemporary][, keepMethod][,
// headers]), res.responseEnd(body), res.head, res.foot. Errors: a synchronous throw or a rejected
// promise of a mod, or a throw of the script, becomes a 500 for that request only (the mod's
// name/version goes to the error page footer when exposeModsInErrorPages is true). Callbacks that
// throw later are handled by request-context.js.
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

const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const querystring = require('node:querystring');
const { loadMods } = require('./mods');
const { compileServerSideScript, compileScriptFactory, scriptPath, SCRIPT_NAME } = require('./legacy-script');
const { legacyArguments } = require('./legacy-mods');
const { setBodyBudget } = require('./post-data');
const { armScriptTimeout } = require('./timeout');
const { installModEnvironment, countRequest, svrFile } = require('./environment');
const { makeForgiving } = require('./forgiving');
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
    ({ mods } = loadMods(modsDirectory(config), {
      required: typeof config.modsDirectory === 'string',
      stateDirectory: stateDirectory(config),
    }));
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

// Log functions with SVR.JS's names, on our stderr log, prefixed with who is talking.
function createLogFacilities(log, who) {
  const info = (message) => log.info(`${who}: ${message}`);
  const warn = (message) => log.warn(`${who}: ${message}`);
  const error = (message) => log.error(`${who}: ${message}`);
  return {
    climessage: info, reqmessage: info, resmessage: info, locmessage: info,
    errmessage: error, locerrmessage: error, locwarnmessage: warn,
  };
}

// .head / head.html and .foot / foot.html in the web root, read once, from a descriptor checked
// to lie where the web root's symlink rule allows (site.webRoot).
function readFirst(site, names) {
  for (const name of names) {
    try {
      return site.webRoot.readContained(path.join(site.root, name));
    } catch { /* try the next one */ }
  }
  return '';
}

// url.parse(target, true)-style object, with the host the client asked for. As SVR.JS: `search`
// is null without a query, and a repeated query key keeps its last value. An absolute-form
// target (a proxy request) is parsed as the URL it is.
function urlObject(req, target) {
  const hash = target.indexOf('#');
  if (hash !== -1) target = target.slice(0, hash);
  let origin = '';
  const absolute = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i.exec(target);
  if (absolute) {
    origin = absolute[0];
    target = target.slice(origin.length) || '/';
  }
  const q = target.indexOf('?');
  const pathname = q === -1 ? target : target.slice(0, q);
  const search = q === -1 ? '' : target.slice(q);
  let host = typeof req.headers.host === 'string' && req.headers.host !== '' ? req.headers.host.toLowerCase() : null;
  let protocol = req.socket && req.socket.encrypted ? 'https:' : 'http:';
  if (origin) {
    protocol = `${origin.slice(0, origin.indexOf(':')).toLowerCase()}:`;
    host = origin.slice(origin.indexOf('//') + 2).toLowerCase() || host;
  }
  const colon = host ? host.lastIndexOf(':') : -1;
  const hasPort = colon !== -1 && host.indexOf(']', colon) === -1;
  return {
    protocol: host ? protocol : null,
    slashes: host ? true : null,
    auth: null,
    host,
    port: hasPort ? host.slice(colon + 1) : null,
    hostname: host ? (hasPort ? host.slice(0, colon) : host) : null,
    hash: null,
    search: search || null,
    query: lastValues(querystring.parse(search.slice(1))),
    pathname,
    path: pathname + search,
    href: host ? `${protocol}//${host}${pathname}${search}` : pathname + search,
  };
}

// SVR.JS 3.x: ?a=1&a=2 gives a = "2".
function lastValues(query) {
  for (const key of Object.keys(query)) {
    if (Array.isArray(query[key])) query[key] = query[key][query[key].length - 1];
  }
  return query;
}

// The sanitized URL as the client asked for it, before the rewrite map.
function beforeRewriting(req) {
  const svr = req.svr;
  return svr && typeof svr.cleanHref === 'string' ? svr.cleanHref + (svr.cleanSearch || '') : req.url;
}

function freeze(object) {
  Object.freeze(object.query);
  return Object.freeze(object);
}

// callServerError(code[, extName][, error][, headers]): optional arguments may be left out.
function errorArguments(code, extName, error, headers) {
  if (typeof code !== 'number' || !Number.isInteger(code)) throw new TypeError('the HTTP error code must be an integer');
  if (extName !== null && typeof extName === 'object') {
    headers = error;
    error = extName;
    extName = undefined;
  }
  if (error !== null && typeof error === 'object' && !(error instanceof Error)) {
    headers = error;
    error = undefined;
  }
  if (typeof error === 'string') {
    const stack = error;
    error = new Error(stack.split('\n')[0]);
    error.stack = stack;
  }
  const status = code >= 400 && code <= 599 && http.STATUS_CODES[code] ? code : 501;
  return { status, extName: typeof extName === 'string' ? extName : undefined, error: error || undefined, headers: headers || undefined };
}

function redirectStatus(isTemporary, keepMethod) {
  if (isTemporary) return keepMethod ? 307 : 302;
  return keepMethod ? 308 : 301;
}

function createStage(site, mods, script) {
  const { config, sendError, log } = site;
  const head = readFirst(site, ['.head', 'head.html']);
  const foot = readFirst(site, ['.foot', 'foot.html']);
  const server = site.serverName;
  const { maxPostDataSize: limit, users, page404 } = config; // schema defaults: 200 MiB, [], 404.html
  setBodyBudget(config.maxPostDataInFlight); // bodies buffered at once by this worker's requests
  const warned = new Set();
  const authenticate = site.authenticate;
  const proxyMods = mods.filter((mod) => mod.proxySafe);
  const connectMods = mods.filter((mod) => mod.proxy);

  // The configured headers (Server first) with SVR.JS's {path} filled in for this request.
  const customHeaders = (req) => headersFor(site, req ? req.url : '{path}');

  // One config object per worker, shared by every mod and the script (as SVR.JS 3.x did), and
  // process.serverConfig: the SVR.JS keys svr reads, under their SVR.JS names, with the schema's
  // defaults applied (users [], page404 "404.html", ...).
  const sharedConfig = Object.assign({}, config, {
    version,
    productName: 'svr',
    getCustomHeaders() {
      const store = requestContext.getStore();
      return customHeaders(store && store.req);
    },
    generateServerString: () => server,
  });
  process.serverConfig = sharedConfig;

  // sendError logs a 5xx error's stack when it can still send the page; when the response has
  // already started it can only cut the connection, so say what happened here.
  function fail(req, res, status, { extName, error, headers } = {}) {
    if (res.headersSent && error !== undefined) {
      log.error(`${extName ? `${extName}: ` : ''}${req.method} ${req.url} failed after its response started: ${describeError(error)}`);
    }
    sendError(req, res, status, { extName, error, headers });
  }

  // defaultExtName: for res.error in a mod, the mod's name/version, so that an error page raised
  // by a mod names it (with exposeModsInErrorPages) even when it passes no extName.
  function errorFunction(req, res, defaultExtName) {
    return function callServerError(code, extName, error, headers) {
      const args = errorArguments(code, extName, error, headers);
      if (args.extName === undefined) args.extName = defaultExtName;
      fail(req, res, args.status, args);
    };
  }

  function redirectFunction(res) {
    return function redirect(destination, isTemporary, keepMethod, headers) {
      if (headers && typeof headers === 'object') {
        for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
      }
      res.setHeader('Location', String(destination));
      res.writeHead(redirectStatus(isTemporary, keepMethod));
      res.end();
    };
  }

  function responseEndFunction(res) {
    return function responseEnd(body) {
      res.write(head + (body === undefined || body === null ? '' : body) + foot);
      res.end();
    };
  }

  // next()/elseCallback: once only, and never after the response has been answered.
  function passOn(res, who, next) {
    let called = false;
    return function elseCallback() {
      if (called) return warnOnce(`${who} called next()/elseCallback() twice; the second call is ignored`);
      called = true;
      if (res.headersSent || res.writableEnded) {
        return warnOnce(`${who} passed the request on after answering it; add "return;" or set disableEndElseCallbackExecute = true`);
      }
      next();
    };
  }

  function warnOnce(message) {
    if (warned.has(message)) return;
    warned.add(message);
    log.warn(message);
  }

  const modLogs = mods.map((mod) => createLogFacilities(log, mod.label));
  const scriptLog = createLogFacilities(log, SCRIPT_NAME);
  const forgiving = makeForgiving((message) => log.warn(message));

  function runMod(index, req, res, next) {
    const mod = mods[index];
    const failed = (error) => fail(req, res, 500, { extName: mod.label, error });
    res.error = errorFunction(req, res, mod.label);
    forgiving.speaking(res, mod.label);
    let result;
    try {
      result = mod.handler(req, res, modLogs[index], sharedConfig, next);
    } catch (error) {
      failed(error);
      return;
    }
    if (result && typeof result.then === 'function') result.then(undefined, failed);
  }

  function runScript(req, res, next) {
    const elseCallback = passOn(res, SCRIPT_NAME, next);
    res.error = errorFunction(req, res);
    forgiving.speaking(res, SCRIPT_NAME);
    try {
      script(...legacyArguments(req, res, scriptLog, sharedConfig, elseCallback, limit));
    } catch (error) {
      fail(req, res, 500, { error });
    }
  }

  // req.rewriteURL(url, callback) (SVR.JS 4.5): a mod points the request at another URL of this
  // site; a URL that is not a clean absolute path (".." or "." segments, "//", a backslash) is 403.
  function rewriteFunction(req, res) {
    return function rewriteURL(url, callback) {
      const target = String(url);
      const pathname = target.split(/[?#]/)[0];
      if (!pathname.startsWith('/') || /\/\.{1,2}(\/|$)|\/\/|\\/.test(pathname) || /%2e|%2f|%5c/i.test(pathname)) {
        log.warn(`${req.method} ${req.url}: invalid URL rewriting to ${target}; answered 403`);
        res.error(403);
        return;
      }
      req.url = target;
      req.parsedURL = freeze(urlObject(req, target));
      if (typeof callback === 'function') callback();
    };
  }

  function decorate(req, res, { isProxy = false } = {}) {
    req.isProxy = isProxy;
    req.parsedURL = freeze(urlObject(req, req.url));
    req.originalParsedURL = isProxy ? req.parsedURL : freeze(urlObject(req, beforeRewriting(req)));
    if (req.authUser === undefined) req.authUser = null;
    req.rewriteURL = rewriteFunction(req, res);
    res.error = errorFunction(req, res); // each mod gets its own (see runMod)
    res.redirect = redirectFunction(res);
    res.responseEnd = responseEndFunction(res);
    res.head = head;
    res.foot = foot;
    forgiving.install(req, res);
    countRequest(res);
  }

  function run(req, res, next) {
    decorate(req, res);
    let index = 0;
    let who = null; // the mod or script that has the request, for scriptTimeout's log line
    const disarm = armScriptTimeout(res, config.scriptTimeout, () => who, (name) => {
      log.error(`${name} did not answer ${req.method} ${req.url} within scriptTimeout (${config.scriptTimeout} ms): 504`);
      fail(req, res, 504, { extName: name });
    });
    const passed = () => { disarm(); next(); };
    const step = () => {
      if (index < mods.length) {
        const current = index++;
        who = mods[current].label;
        runMod(current, req, res, passOn(res, mods[current].label, step));
      } else if (script) {
        who = SCRIPT_NAME;
        runScript(req, res, passed);
      } else {
        passed();
      }
    };
    step();
  }

  // Absolute-form requests: only the mods that take proxy requests, then 501.
  function runProxy(req, res) {
    decorate(req, res, { isProxy: true });
    let index = 0;
    const step = () => {
      if (index < proxyMods.length) {
        const mod = proxyMods[index++];
        runMod(mods.indexOf(mod), req, res, passOn(res, mod.label, step));
      } else {
        fail(req, res, 501);
      }
    };
    step();
  }

  function withUser(req, res, go) {
    if (authenticate && req.headers.authorization !== undefined) {
      return authenticate(req).then(({ user, throttled, retryAfter }) => {
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

  function scripting(req, res, next) {
    const state = { req, res, fail: (error) => fail(req, res, 500, { error }) };
    return withUser(req, res, () => runUserCode(state, run, req, res, next));
  }

  scripting.proxyRequest = proxyMods.length === 0 ? null : function proxyRequest(req, res) {
    if (!req.svr) req.svr = { originalUrl: req.url, bodyBytes: undefined, user: null };
    const state = { req, res, fail: (error) => fail(req, res, 500, { error }) };
    return withUser(req, res, () => runUserCode(state, runProxy, req, res));
  };

  scripting.connect = connectMods.length === 0 ? null : function connect(req, socket, head) {
    socket.on('error', () => {}); // a client gone mid-tunnel is not the worker's problem
    req.isProxy = true;
    let index = 0;
    const step = () => {
      if (index >= connectMods.length) {
        if (!socket.destroyed) socket.end(BARE_501);
        return;
      }
      const mod = connectMods[index++];
      const logFacilities = modLogs[mods.indexOf(mod)];
      let done = false;
      const next = () => {
        if (done) return;
        done = true;
        step();
      };
      try {
        mod.proxy(req, socket, head, logFacilities, sharedConfig, next);
      } catch (error) {
        log.error(`${mod.label}: its proxy handler threw for CONNECT ${req.url}: ${describeError(error)}`);
        if (!socket.destroyed) socket.end('HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
      }
    };
    const state = { req, res: { headersSent: true }, fail: () => { if (!socket.destroyed) socket.destroy(); } };
    requestContext.run(state, step);
  };

  return scripting;
}

module.exports = { createScriptingStage, checkScriptingStage, urlObject, errorArguments };
