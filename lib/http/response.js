'use strict';
// svr's HTTP/1 response: Node's ServerResponse, except that the site's fixed headers (Server and
// the fixed customHeaders, set for every request by the first stage) wait on the response until
// something reads or writes its headers, and are then set as if they had been set first.
//
// Why: Node's writeHead(status, headers) builds the head straight from the object it is given
// when setHeader was never called on the response; a single setHeader before it makes writeHead
// merge the object into the response one setHeader at a time (each validated, lower-cased and
// stored). The static stage answers with a header object made once per file version; with the
// fixed headers folded into that object (takeDeferred), most responses take the direct path.
//
//   deferHeaders(res, fixed) -> boolean   fixed: [[name, value]]; false when res is not an
//                                          SvrResponse (HTTP/2, a response made for an upgraded
//                                          socket): the caller sets them at once instead
//   takeDeferred(res, fixed) -> boolean   true when `fixed` is still waiting and nothing else was
//                                          set on the response: the caller puts them (first) into
//                                          the header object it gives writeHead
//   whenClosed(res, onClose)               onClose() once, as the response's 'close' is emitted:
//                                          on an SvrResponse a slot read by its emit (no listener
//                                          added per response; several run in the order given),
//                                          else res.on('close')
//
// Every reader and writer of the response's headers (getHeader, getHeaders, getHeaderNames,
// hasHeader, removeHeader, appendHeader, writeHead, which write, end and flushHeaders go through) sets the
// waiting headers first, each unless a stage set the same name since, as a later setHeader
// replaces an earlier one: what scripts, mods and stages see is what they saw when the headers
// were set first. Only the order of the fields on the wire can differ.

const http = require('node:http');

const kDeferred = Symbol('svr.deferredHeaders');
const kOnClose = Symbol('svr.onClose');
// Node's own methods, for the waiting headers themselves (the overrides below would recurse).
const { getHeaderNames, hasHeader, setHeader } = http.ServerResponse.prototype;

function applyDeferred(res) {
  const fixed = res[kDeferred];
  if (fixed === null) return;
  res[kDeferred] = null;
  if (res.headersSent) return;
  for (let i = 0; i < fixed.length; i++) {
    const [name, value] = fixed[i];
    if (!hasHeader.call(res, name)) setHeader.call(res, name, value);
  }
}

class SvrResponse extends http.ServerResponse {
  constructor(req, options) {
    super(req, options);
    this[kDeferred] = null;
    this[kOnClose] = null;
  }

  // 'close' comes once per response, after 'finish' or when the connection is lost first; the
  // worker's bookkeeping and the access log run first, as a listener added on arrival would.
  emit(event, arg) {
    if (event === 'close' && this[kOnClose] !== null) {
      const onClose = this[kOnClose];
      this[kOnClose] = null;
      onClose();
    }
    if (arguments.length <= 2) return arguments.length === 1 ? super.emit(event) : super.emit(event, arg);
    return super.emit(...arguments);
  }

  writeHead(statusCode, reason, headers) {
    applyDeferred(this);
    return super.writeHead(statusCode, reason, headers);
  }

  getHeader(name) {
    applyDeferred(this);
    return super.getHeader(name);
  }

  getHeaders() {
    applyDeferred(this);
    return super.getHeaders();
  }

  getHeaderNames() {
    applyDeferred(this);
    return super.getHeaderNames();
  }

  hasHeader(name) {
    applyDeferred(this);
    return super.hasHeader(name);
  }

  removeHeader(name) {
    applyDeferred(this);
    return super.removeHeader(name);
  }

  appendHeader(name, value) { // adds to a fixed header of that name, as it would have
    applyDeferred(this);
    return super.appendHeader(name, value);
  }
}

function deferHeaders(res, fixed) {
  if (res[kDeferred] !== null) return false; // not ours (undefined), or already waiting
  res[kDeferred] = fixed;
  return true;
}

function takeDeferred(res, fixed) {
  if (res[kDeferred] !== fixed || getHeaderNames.call(res).length !== 0) return false;
  res[kDeferred] = null;
  return true;
}

function whenClosed(res, onClose) {
  const before = res[kOnClose];
  if (before === undefined) res.on('close', onClose); // not an SvrResponse
  else res[kOnClose] = before === null ? onClose : () => { before(); onClose(); }; // in the order given
}

module.exports = { SvrResponse, deferHeaders, takeDeferred, whenClosed };
