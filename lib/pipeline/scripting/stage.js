'use strict';
// The scripting stage itself, for a site with mods or a serverSideScript.js (index.js loads them
// and requires this file only then, so a static site's worker never loads what a request into
// user code needs: the SVR.JS request API, POST parsing, the script timeout).
//
//   createStage(site, mods, script) -> scripting(req, res, next), with .proxyRequest and .connect
//   (described in index.js)
//
// The functions below take the stage's state `s`, built once per pipeline, or a request's record
// (ScriptRun): one object per request for what it needs on its way through the mods and the
// script, instead of a closure for each step.

const { SCRIPT_NAME } = require('./legacy-script');
const { callLegacy } = require('./legacy-mods');
const { setBodyBudget } = require('./post-data');
const { createScriptTimeout } = require('./timeout');
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
    postData: { limit: config.maxPostDataSize }, // parsePostData's options, the same for every request
    warned: new Set(),
    mods,
    script,
    proxyMods: mods.filter((mod) => mod.proxySafe),
    connectMods: mods.filter((mod) => mod.proxy),
    modLogs: mods.map((mod) => createLogFacilities(log, mod.label)),
    scriptLog: createLogFacilities(log, SCRIPT_NAME),
    forgiving: null,
    timeout: createScriptTimeout(config.scriptTimeout, (run) => {
      log.error(`${run.who} did not answer ${run.req.method} ${run.req.url} within scriptTimeout (${config.scriptTimeout} ms): 504`);
      fail(s, run.req, run.res, 504, { extName: run.who });
    }),
    sharedConfig: sharedConfigFor(site),
  };
  // A response that has started is answered: its timeout has nothing left to do.
  s.forgiving = createForgiving(log, (run) => s.timeout.disarm(run));
  process.serverConfig = s.sharedConfig;

  function scripting(req, res, next) {
    return withUser(new ScriptRun(s, req, res, next, false));
  }
  scripting.proxyRequest = s.proxyMods.length === 0 ? null : function proxyRequest(req, res) {
    return withUser(new ScriptRun(s, req, res, null, true));
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

// One request's way through the mods and then the script (or, for an absolute-form request, the
// mods that take proxy requests and then 501). It is also
//   - the state request-context.js keeps for the request's user code: req, res, fail(error);
//   - forgiving.js's record of the response (who, the response's own methods);
//   - an entry of the script timeout's list (deadline, older, newer: timeout.js).
// All its fields are set here, so that every request's record has the same shape.
class ScriptRun {
  constructor(s, req, res, next, isProxy) {
    this.s = s;
    this.req = req;
    this.res = res;
    this.next = next; // the static stage, after the script
    this.isProxy = isProxy;
    this.index = 0; // the next mod (of s.mods, or s.proxyMods for a proxy request)
    this.who = null; // the mod or script that has the request, for the log lines
    this.deadline = 0;
    this.older = null;
    this.newer = null;
    this.wroteHead = false;
    this.nativeWriteHead = null;
    this.nativeWrite = null;
    this.nativeEnd = null;
    this.nativeSetHeader = null;
  }

  // request-context.js: user code crashed while it had the request.
  fail(error) {
    fail(this.s, this.req, this.res, 500, { error });
  }

  // The first mod, script or stage, and then whoever is next each time one passes the request on.
  advance() {
    const s = this.s;
    if (this.isProxy) {
      if (this.index < s.proxyMods.length) {
        const mod = s.proxyMods[this.index++];
        runMod(this, s.mods.indexOf(mod));
      } else {
        fail(s, this.req, this.res, 501);
      }
    } else if (this.index < s.mods.length) {
      runMod(this, this.index++);
    } else if (s.script && this.who !== SCRIPT_NAME) {
      runScript(this);
    } else {
      s.timeout.disarm(this);
      this.next();
    }
  }
}

// Inside the request context (request-context.js), whose state is the run: the mods in order,
// then the script, then next(); scriptTimeout watches whoever has the request.
function start() {
  const run = requestContext.getStore();
  decorate(run, run.isProxy);
  if (!run.isProxy) run.s.timeout.arm(run);
  run.advance();
}

function runMod(run, index) {
  const { s, req, res } = run;
  const mod = s.mods[index];
  run.who = mod.label;
  res.error = errorFunction(run, mod.label);
  let result;
  try {
    result = mod.handler(req, res, s.modLogs[index], s.sharedConfig, passOn(run, mod.label));
  } catch (error) {
    fail(s, req, res, 500, { extName: mod.label, error });
    return;
  }
  if (result && typeof result.then === 'function') result.then(undefined, (error) => fail(s, req, res, 500, { extName: mod.label, error }));
}

function runScript(run) {
  const { s, req, res } = run;
  run.who = SCRIPT_NAME;
  res.error = errorFunction(run);
  try {
    callLegacy(s.script, undefined, req, res, s.scriptLog, s.sharedConfig, passOn(run, SCRIPT_NAME), s.postData);
  } catch (error) {
    fail(s, req, res, 500, { error });
  }
}

function withUser(run) {
  const { s, req, res } = run;
  if (s.authenticate && req.headers.authorization !== undefined) {
    return s.authenticate(req).then(({ user, throttled, retryAfter }) => {
      req.svr.user = user;
      req.authUser = user;
      // Too many failures from this address: nothing was checked; whatever the script answers
      // (its own 401, typically) tells the client when to try again.
      if (throttled) res.setHeader('Retry-After', String(retryAfter));
      runUserCode(run, start);
    });
  }
  runUserCode(run, start);
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
