'use strict';
// svr's responses: Node's ServerResponse and Http2ServerResponse, except that the site's fixed
// headers (Server and the fixed customHeaders, set for every request by the first stage) wait on
// the response until something reads or writes its headers, and are then set as if they had been
// set first.
//
// Why: Node's HTTP/1 writeHead(status, headers) builds the head straight from the object it is
// given when setHeader was never called on the response; a single setHeader before it makes
// writeHead merge the object into the response one setHeader at a time (each validated,
// lower-cased and stored). HTTP/2's head is one object too (net/http2-sessions.js, respondWhole).
// The static stage answers with a header object made once per file version; with the fixed
// headers folded into that object (takeDeferred), most responses take the direct path.
//
//   deferringResponse(Base) -> class      Base with the waiting headers and the close slot below
//                                          (SvrResponse here; HTTP/2's in net/http2-sessions.js).
//                                          Base.prototype's setHeader and hasHeader set them.
//   deferHeaders(res, fixed) -> boolean   fixed: [[name, value]]; false when res is not such a
//                                          response (a response made for an upgraded socket): the
//                                          caller sets them at once instead
//   takeDeferred(res, fixed) -> boolean   true when `fixed` is still waiting and nothing else was
//                                          set on the response: the caller puts them (first) into
//                                          the header object it answers with
//   applyDeferred(res)                     sets what still waits (a subclass's own head writer)
//   whenClosed(res, onClose)               onClose() once, as the response's 'close' is emitted:
//                                          on such a response a slot read by its emit (no listener
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
const kApply = Symbol('svr.applyDeferred');
const kNothingSet = Symbol('svr.nothingSet');

function deferringResponse(Base) {
  // The base's own methods, for the waiting headers themselves (the overrides below would recurse).
  const { getHeaderNames, hasHeader, setHeader } = Base.prototype;

  return class DeferringResponse extends Base {
    constructor(first, options) { // (req, options) for HTTP/1, (stream, options) for HTTP/2
      super(first, options);
      this[kDeferred] = null;
      this[kOnClose] = null;
    }

    [kApply]() {
      const fixed = this[kDeferred];
      if (fixed === null) return;
      this[kDeferred] = null;
      if (this.headersSent) return;
      for (let i = 0; i < fixed.length; i++) {
        const [name, value] = fixed[i];
        if (!hasHeader.call(this, name)) setHeader.call(this, name, value);
      }
    }

    [kNothingSet]() {
      return getHeaderNames.call(this).length === 0;
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
      if (this[kDeferred] !== null) this[kApply]();
      return super.writeHead(statusCode, reason, headers);
    }

    getHeader(name) {
      if (this[kDeferred] !== null) this[kApply]();
      return super.getHeader(name);
    }

    getHeaders() {
      if (this[kDeferred] !== null) this[kApply]();
      return super.getHeaders();
    }

    getHeaderNames() {
      if (this[kDeferred] !== null) this[kApply]();
      return super.getHeaderNames();
    }

    hasHeader(name) {
      if (this[kDeferred] !== null) this[kApply]();
      return super.hasHeader(name);
    }

    removeHeader(name) {
      if (this[kDeferred] !== null) this[kApply]();
      return super.removeHeader(name);
    }

    appendHeader(name, value) { // adds to a fixed header of that name, as it would have
      if (this[kDeferred] !== null) this[kApply]();
      return super.appendHeader(name, value);
    }
  };
}

class SvrResponse extends deferringResponse(http.ServerResponse) {}

function deferHeaders(res, fixed) {
  if (res[kDeferred] !== null) return false; // not ours (undefined), or already waiting
  res[kDeferred] = fixed;
  return true;
}

function takeDeferred(res, fixed) {
  if (res[kDeferred] !== fixed || !res[kNothingSet]()) return false;
  res[kDeferred] = null;
  return true;
}

function applyDeferred(res) {
  if (res[kDeferred] !== undefined) res[kApply]();
}

function whenClosed(res, onClose) {
  const before = res[kOnClose];
  if (before === undefined) res.on('close', onClose); // not ours
  else res[kOnClose] = before === null ? onClose : () => { before(); onClose(); }; // in the order given
}

module.exports = { SvrResponse, deferringResponse, deferHeaders, takeDeferred, applyDeferred, whenClosed };
