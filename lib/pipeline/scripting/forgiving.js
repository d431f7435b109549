'use strict';
// SVR.JS tolerated two mistakes that Node turns into exceptions: a second res.writeHead (Node
// throws ERR_HTTP_HEADERS_SENT), and writing after the response ended (Node emits an 'error' on
// the response, which nobody listens to). In an async callback either one is an uncaught
// exception, and svr recycles the worker for it, dropping the other requests it serves. Typical
// cause: an async script that forgot `disableEndElseCallbackExecute = true`, so the static stage
// answered first. As in SVR.JS, these calls now log a warning naming the code (the mod or
// serverSideScript.js that last ran for the request) and the URL, and do nothing.
//
//   const forgiving = makeForgiving(warn, onHead)   once per worker
//   forgiving.install(run)    per request, before user code runs. run: the request's record
//                             (stage.js ScriptRun): run.req, run.res, run.who (the code that has
//                             the request now), and the four fields below for this file
//   onHead(run)               called once, when the response's head is first written (what is
//                             counted and disarmed when a response starts: stage.js)
// The replacement methods are made once; per request they only read a few fields of the run.

const RUN = Symbol('svr.scripting.run');

function makeForgiving(warn, onHead = () => {}) {
  const tell = (res, what) => {
    const run = res[RUN];
    warn(`${run.who || 'server-side JavaScript'}: ${what} for ${run.req.method} ${run.req.url}; ignored (the response was already sent)`);
  };

  function writeHead(...args) {
    const run = this[RUN];
    if (run.wroteHead || this.headersSent) {
      tell(this, 'res.writeHead called again');
      return this;
    }
    run.wroteHead = true;
    run.nativeWriteHead.apply(this, args);
    onHead(run);
    return this;
  }

  function write(...args) {
    if (this.writableEnded) {
      tell(this, 'res.write after the response ended');
      return false;
    }
    return this[RUN].nativeWrite.apply(this, args);
  }

  function end(...args) {
    if (this.writableEnded) {
      if (args.length > 0 && args[0] !== undefined && typeof args[0] !== 'function') tell(this, 'res.end with data after the response ended');
      return this;
    }
    return this[RUN].nativeEnd.apply(this, args);
  }

  function setHeader(name, value) {
    if (this.headersSent) {
      tell(this, `res.setHeader("${name}") after the headers were sent`);
      return this;
    }
    return this[RUN].nativeSetHeader.call(this, name, value);
  }

  return {
    install(run) {
      const res = run.res;
      // Node's methods as this response has them (an HTTP/2 response's are not HTTP/1's).
      res[RUN] = run;
      run.wroteHead = false;
      run.nativeWriteHead = res.writeHead;
      run.nativeWrite = res.write;
      run.nativeEnd = res.end;
      run.nativeSetHeader = res.setHeader;
      res.writeHead = writeHead;
      res.write = write;
      res.end = end;
      res.setHeader = setHeader;
    },
  };
}

module.exports = { makeForgiving };
