'use strict';
// The SVR.JS API a request carries into mods and serverSideScript.js, given before the first mod
// runs (decorate):
//   req.parsedURL, req.originalParsedURL   frozen url.parse-style objects with a `query` object
//   req.authUser                           SVR.JS's name for req.svr.user
//   req.isProxy, req.rewriteURL(url, callback)
//   res.error(code[, extName][, error][, headers]), res.redirect(dest[, isTemporary][, keepMethod]
//   [, headers]), res.responseEnd(body), res.head, res.foot
// and what passes a request on: next() / elseCallback (passOn), once only and never after the
// response was answered.
//
// Each function takes the scripting stage's state `s` (stage.js createStage): sendError, log, the
// head and foot, and the set of warnings already given; or the request's record `run` (stage.js
// ScriptRun: run.s, run.req, run.res), whose functions share it instead of each keeping its own
// copy of s, req and res.

const http = require('node:http');
const querystring = require('node:querystring');
const { describeError } = require('../../request-context');
const { makeForgiving } = require('./forgiving');
const { countRequest, countAnswer } = require('./environment');

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
    query: search.length <= 1 ? EMPTY_QUERY : lastValues(querystring.parse(search.slice(1))),
    pathname,
    path: pathname + search,
    href: host ? `${protocol}//${host}${pathname}${search}` : pathname + search,
  };
}

// What querystring.parse gives for no query (an object without a prototype), made once: the
// query of every URL object is frozen, so one empty query serves them all.
const EMPTY_QUERY = Object.freeze(Object.create(null));

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

// sendError logs a 5xx error's stack when it can still send the page; when the response has
// already started it can only cut the connection, so say what happened here.
function fail(s, req, res, status, { extName, error, headers } = {}) {
  if (res.headersSent && error !== undefined) {
    s.log.error(`${extName ? `${extName}: ` : ''}${req.method} ${req.url} failed after its response started: ${describeError(error)}`);
  }
  s.sendError(req, res, status, { extName, error, headers });
}

// defaultExtName: for res.error in a mod, the mod's name/version, so that an error page raised
// by a mod names it (with exposeModsInErrorPages) even when it passes no extName.
function errorFunction(run, defaultExtName) {
  return function callServerError(code, extName, error, headers) {
    const args = errorArguments(code, extName, error, headers);
    if (args.extName === undefined) args.extName = defaultExtName;
    fail(run.s, run.req, run.res, args.status, args);
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

function responseEndFunction(s, res) {
  return function responseEnd(body) {
    res.write(s.head + (body === undefined || body === null ? '' : body) + s.foot);
    res.end();
  };
}

function rewriteFunction(s, req, res) {
  return (url, callback) => rewriteURL(s, req, res, url, callback);
}

// req.rewriteURL(url, callback) (SVR.JS 4.5): a mod points the request at another URL of this
// site; a URL that is not a clean absolute path (".." or "." segments, "//", a backslash) is 403.
function rewriteURL(s, req, res, url, callback) {
  const target = String(url);
  const pathname = target.split(/[?#]/)[0];
  if (!pathname.startsWith('/') || /\/\.{1,2}(\/|$)|\/\/|\\/.test(pathname) || /%2e|%2f|%5c/i.test(pathname)) {
    s.log.warn(`${req.method} ${req.url}: invalid URL rewriting to ${target}; answered 403`);
    res.error(403);
    return;
  }
  req.url = target;
  req.parsedURL = freeze(urlObject(req, target));
  if (typeof callback === 'function') callback();
}

// Forgiving where SVR.JS was (forgiving.js): one per stage, naming whoever has the request.
// When a response's head is written, SVR.JS's 4xx/5xx counters count it and onHead(run) is told.
function createForgiving(log, onHead) {
  return makeForgiving((message) => log.warn(message), (run) => {
    countAnswer(run.res.statusCode);
    onHead(run);
  });
}

// The SVR.JS API on the request and the response. Each function is made by a function of its own
// and closes over what it uses only: the three made here as arrows of decorate, sharing one scope
// that held the run, made V8 promote 3.3 KB per hello request instead of 0.2 KB with a 2 MB young
// generation (scripts/bench-alloc.js; why was not found).
function decorate(run, isProxy = false) {
  const { s, req, res } = run;
  req.isProxy = isProxy;
  req.parsedURL = freeze(urlObject(req, req.url));
  // Unrewritten (most requests), the URL as asked for is the URL: the same frozen object, one less
  // per request for the garbage collector to copy while the script runs.
  const asked = isProxy ? req.url : beforeRewriting(req);
  req.originalParsedURL = asked === req.url ? req.parsedURL : freeze(urlObject(req, asked));
  if (req.authUser === undefined) req.authUser = null;
  req.rewriteURL = rewriteFunction(s, req, res);
  // res.error: each mod and the script get their own as they start (stage.js runMod, runScript).
  res.redirect = redirectFunction(res);
  res.responseEnd = responseEndFunction(s, res);
  res.head = s.head;
  res.foot = s.foot;
  s.forgiving.install(run);
  countRequest();
}

// next()/elseCallback: once only, and never after the response has been answered; then
// run.advance() gives the request to whoever is next.
function passOn(run, who) {
  let called = false;
  return function elseCallback() {
    if (called) return warnOnce(run.s, `${who} called next()/elseCallback() twice; the second call is ignored`);
    called = true;
    const res = run.res;
    if (res.headersSent || res.writableEnded) {
      return warnOnce(run.s, `${who} passed the request on after answering it; add "return;" or set disableEndElseCallbackExecute = true`);
    }
    run.advance();
  };
}

function warnOnce(s, message) {
  if (s.warned.has(message)) return;
  s.warned.add(message);
  s.log.warn(message);
}

module.exports = {
  createLogFacilities, createForgiving, decorate, errorFunction, fail, passOn,
  urlObject, errorArguments,
};
