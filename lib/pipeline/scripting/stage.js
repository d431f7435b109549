'use strict';
// The scripting stage itself, for a site with mods or a serverSideScript.js (index.js loads them
// and requires this file only then, so a static site's worker never loads what a request into
// user code needs: the SVR.JS request API, POST parsing, the script timeout).
//
//   createStage(site, mods, script) -> scripting(req, res, next), with .proxyRequest and .connect
//   (described in index.js)
//
// The functions below take the stage's state `s`, built once per pipeline.

const { SCRIPT_NAME } = require('./legacy-script');
const { legacyArguments } = require('./legacy-mods');
const { setBodyBudget } = require('./post-data');
const { armScriptTimeout } = require('./timeout');
const { createLogFacilities, createForgiving, decorate, errorFunction, fail, passOn } = require('./svrjs-api');
const { headersFor } = require('../site');
const { BARE_501 } = require('../../http/headers');
const { requestContext, runUserCode, describeError } = require('../../request-context');
const { version } = require('../../product');

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

module.exports = { createStage };
