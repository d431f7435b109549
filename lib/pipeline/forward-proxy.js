'use strict';
// Stage: absolute-form requests ("GET http://host/path HTTP/1.1") to the mods that take proxy
// requests (SVR.JS's forward proxy). It runs first, as SVR.JS hands them over: the mod sees the
// request untouched, and svr's Server and custom headers do not apply to the proxied answer.
// Without such a mod an absolute-form request is served by its path like any other. (A CONNECT's
// authority-form target is the connect stage's.)
// proxyRequest(req, res): the scripting stage's handler for them, or null.

function createForwardProxyStage(proxyRequest) {
  if (!proxyRequest) return null;
  return function forwardProxy(req, res, next) {
    return req.method !== 'CONNECT' && isAbsoluteForm(req.url) ? proxyRequest(req, res) : next();
  };
}

function isAbsoluteForm(target) {
  return typeof target === 'string' && target !== '*' && !target.startsWith('/');
}

module.exports = { createForwardProxyStage };
