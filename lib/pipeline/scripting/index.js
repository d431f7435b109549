'use strict';
// Stage 4 of the pipeline: server-side JavaScript. Mods in file-name order, then
// serverSideScript.js, then (via next) the static stage.
//
//   createScriptingStage(site) -> null | scripting(req, res, next)
//     Loads the mods and compiles the script once (when a worker builds its pipeline, at start
//     and on a reload). Throws ModLoadError / ScriptLoadError naming the file. Returns null when
//     there is neither a mod nor a script, so the pipeline runs without this stage.
//
// A request gets, before the first mod runs: req.parsedURL, req.originalParsedURL (frozen
// url.parse-style objects with a `query` object), req.authUser (SVR.JS's name for req.svr.user, lib/pipeline/credentials.js); res.error(code[, extName][,
// error][, headers]), res.redirect(dest[, isTemporary][, keepMethod][, headers]),
// res.responseEnd(body), res.head, res.foot. Errors: a synchronous throw or a rejected promise of
// a mod, or a throw of the script, becomes a 500 for that request only (the mod's name/version
// goes to the error page footer when exposeModsInErrorPages is true). Callbacks that throw later
// are handled by lib/request-context.js.

const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const querystring = require('node:querystring');
const { loadMods } = require('./mods');
const { compileServerSideScript, scriptPath, SCRIPT_NAME } = require('./legacy-script');
const { createParsePostData } = require('./post-data');
const { headersFor } = require('../site');
const { requestContext, describeError } = require('../../request-context');
const { version, INSTALL_DIR, modsDirectory } = require('../../product');

const DEFAULT_PAGE = 'index.html';

function createScriptingStage(site) {
  const { config, log } = site;
  const mods = loadMods(modsDirectory(config), { required: typeof config.modsDirectory === 'string' });
  const scriptFile = scriptPath(config, INSTALL_DIR);
  const script = compileServerSideScript(scriptFile);
  for (const mod of mods) {
    if (!mod.hasInfo) log.warn(`${mod.file}: exports no modInfo {name, version}; calling it ${mod.label}`);
  }
  if (mods.length === 0 && !script) return null;
  const loaded = mods.map((mod) => mod.label);
  if (script) loaded.push(scriptFile);
  log.info(`server-side JavaScript: ${loaded.join(', ')}`);
  return createStage(site, mods, script);
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

// .head / head.html and .foot / foot.html in the web root, read once.
function readFirst(dir, names) {
  for (const name of names) {
    try {
      return fs.readFileSync(path.join(dir, name), 'utf8');
    } catch { /* try the next one */ }
  }
  return '';
}

// url.parse(target, true)-style object, with the host the client asked for.
function urlObject(req, target) {
  const hash = target.indexOf('#');
  if (hash !== -1) target = target.slice(0, hash);
  const q = target.indexOf('?');
  const pathname = q === -1 ? target : target.slice(0, q);
  const search = q === -1 ? '' : target.slice(q);
  const host = typeof req.headers.host === 'string' && req.headers.host !== '' ? req.headers.host.toLowerCase() : null;
  const colon = host ? host.lastIndexOf(':') : -1;
  const hasPort = colon !== -1 && host.indexOf(']', colon) === -1;
  const protocol = req.socket && req.socket.encrypted ? 'https:' : 'http:';
  return {
    protocol: host ? protocol : null,
    slashes: host ? true : null,
    auth: null,
    host,
    port: hasPort ? host.slice(colon + 1) : null,
    hostname: host ? (hasPort ? host.slice(0, colon) : host) : null,
    hash: null,
    search: search || null,
    query: querystring.parse(search.slice(1)),
    pathname,
    path: pathname + search,
    href: host ? `${protocol}//${host}${pathname}${search}` : pathname + search,
  };
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
  const head = readFirst(site.root, ['.head', 'head.html']);
  const foot = readFirst(site.root, ['.foot', 'foot.html']);
  const server = site.serverName;
  const limit = Number.isInteger(config.maxPostDataSize) ? config.maxPostDataSize : 1048576;
  const users = Array.isArray(config.users) ? config.users : [];
  const page404 = config.page404 === undefined ? '404.html' : config.page404;
  const warned = new Set();
  const authenticate = site.authenticate;

  // The configured headers (Server first) with SVR.JS's {path} filled in for this request.
  const customHeaders = (req) => headersFor(site, req ? req.url : '{path}');

  // One config object per worker, shared by every mod and the script (as SVR.JS 3.x did).
  const sharedConfig = Object.assign({}, config, {
    wwwroot: config.wwwroot,
    version,
    productName: 'svr',
    getCustomHeaders() {
      const store = requestContext.getStore();
      return customHeaders(store && store.req);
    },
    generateServerString: () => server,
  });

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

  function runMod(index, req, res, next) {
    const mod = mods[index];
    const failed = (error) => fail(req, res, 500, { extName: mod.label, error });
    res.error = errorFunction(req, res, mod.label);
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
    const target = req.url;
    const q = target.indexOf('?');
    const href = q === -1 ? target : target.slice(0, q);
    const search = q === -1 ? '' : target.slice(q);
    const origHref = beforeRewriting(req).split('?')[0];
    const ext = path.posix.extname(href).slice(1).toLowerCase();
    const elseCallback = passOn(res, SCRIPT_NAME, next);
    const callServerError = errorFunction(req, res);
    const parsePostData = createParsePostData(req, res, {
      limit,
      fail: (status, error, headers) => fail(req, res, status, { error, headers }),
    });
    try {
      script(
        req, res, scriptLog, responseEndFunction(res), href, ext, urlObject(req, target), search,
        DEFAULT_PAGE, users, page404, head, foot, '', elseCallback, sharedConfig, callServerError,
        () => customHeaders(req), origHref, redirectFunction(res), parsePostData, req.authUser ?? null,
      );
    } catch (error) {
      fail(req, res, 500, { error });
    }
  }

  function decorate(req, res) {
    req.parsedURL = freeze(urlObject(req, req.url));
    req.originalParsedURL = freeze(urlObject(req, beforeRewriting(req)));
    if (req.authUser === undefined) req.authUser = null;
    res.error = errorFunction(req, res); // each mod gets its own (see runMod)
    res.redirect = redirectFunction(res);
    res.responseEnd = responseEndFunction(res);
    res.head = head;
    res.foot = foot;
  }

  function run(req, res, next) {
    decorate(req, res);
    let index = 0;
    const step = () => {
      if (index < mods.length) {
        const current = index++;
        runMod(current, req, res, passOn(res, mods[current].label, step));
      } else if (script) {
        runScript(req, res, next);
      } else {
        next();
      }
    };
    step();
  }

  return function scripting(req, res, next) {
    const state = { req, res, fail: (error) => fail(req, res, 500, { error }) };
    if (authenticate && req.headers.authorization !== undefined) {
      return authenticate(req).then((name) => {
        req.svr.user = name;
        req.authUser = name;
        requestContext.run(state, run, req, res, next);
      });
    }
    requestContext.run(state, run, req, res, next);
    return undefined;
  };
}

module.exports = { createScriptingStage, urlObject, errorArguments };
