'use strict';
// SVR.JS tolerated two mistakes that Node turns into exceptions: a second res.writeHead (Node
// throws ERR_HTTP_HEADERS_SENT), and writing after the response ended (Node emits an 'error' on
// the response, which nobody listens to). In an async callback either one is an uncaught
// exception, and svr recycles the worker for it, dropping the other requests it serves. Typical
// cause: an async script that forgot `disableEndElseCallbackExecute = true`, so the static stage
// answered first. As in SVR.JS, these calls now log a warning naming the code (the mod or
// serverSideScript.js that last ran for the request) and the URL, and do nothing.
//
//   const forgiving = makeForgiving(warn)    once per worker
//   forgiving.install(req, res)              per request, before user code runs
//   forgiving.speaking(res, who)             the code about to run for this request
// The replacement methods are made once; per request they only read a few fields on res.

const WHO = Symbol('svr.scripting.who');
const REQ = Symbol('svr.scripting.req');
const WROTE_HEAD = Symbol('svr.scripting.wroteHead');
const NATIVE = Symbol('svr.scripting.native');

function makeForgiving(warn) {
  const tell = (res, what) => {
    const req = res[REQ];
    warn(`${res[WHO] || 'server-side JavaScript'}: ${what} for ${req.method} ${req.url}; ignored (the response was already sent)`);
  };

  function writeHead(...args) {
    if (this[WROTE_HEAD] || this.headersSent) {
      tell(this, 'res.writeHead called again');
      return this;
    }
    this[WROTE_HEAD] = true;
    this[NATIVE].writeHead.apply(this, args);
    return this;
  }

  function write(...args) {
    if (this.writableEnded) {
      tell(this, 'res.write after the response ended');
      return false;
    }
    return this[NATIVE].write.apply(this, args);
  }

  function end(...args) {
    if (this.writableEnded) {
      if (args.length > 0 && args[0] !== undefined && typeof args[0] !== 'function') tell(this, 'res.end with data after the response ended');
      return this;
    }
    return this[NATIVE].end.apply(this, args);
  }

  function setHeader(name, value) {
    if (this.headersSent) {
      tell(this, `res.setHeader("${name}") after the headers were sent`);
      return this;
    }
    return this[NATIVE].setHeader.call(this, name, value);
  }

  return {
    install(req, res) {
      res[REQ] = req;
      res[NATIVE] = { writeHead: res.writeHead, write: res.write, end: res.end, setHeader: res.setHeader };
      res.writeHead = writeHead;
      res.write = write;
      res.end = end;
      res.setHeader = setHeader;
    },
    speaking(res, who) {
      res[WHO] = who;
    },
  };
}

module.exports = { makeForgiving };
