'use strict';
// HTTP/1.1 pipelining, bounded. Node parses every pipelined request
// it has read and runs its handler at once; the answers wait in a queue. So one connection
// sending 200,000 requests whose answers it never reads had every one of them running (an open
// file each) and grew a worker by hundreds of MiB. Here at most `maxRunning` requests of one
// connection are handled at a time, the rest wait their turn in order, and the connection is
// not read while requests wait (as nginx, which reads the next request only after answering).
// Only safe methods run side by side (RFC 9112 §9.3.2): a POST waits for the requests before it,
// and those after it wait for its answer, so a pipelined GET /cart sees what POST /cart did.

const { whenClosed } = require('../http/response');

const kPipeline = Symbol('svr.pipeline');
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE']);

function boundPipelining(handler, maxRunning) {
  return function pipelinedRequest(req, res) {
    // An HTTP/2 stream has no pipeline; its req.socket would be a proxy object made for the stream.
    if (req.httpVersionMajor >= 2) return handler(req, res);
    const socket = req.socket;
    if (!socket) return handler(req, res);
    const state = socket[kPipeline] || track(socket);
    if (state.waiting.length === 0 && mayRun(state, req)) return run(state, req, res);
    state.waiting.push([req, res]);
    socket.pause();
    return undefined;
  };

  function mayRun(state, req) {
    if (state.running === 0) return true;
    return state.running < maxRunning && !state.unsafeRunning && SAFE_METHODS.has(req.method);
  }

  function track(socket) {
    const state = { running: 0, unsafeRunning: false, waiting: [], socket };
    socket[kPipeline] = state;
    // Node resumes a connection it paused itself once its output drains: not while ours wait.
    socket.on('resume', () => { if (state.waiting.length > 0) socket.pause(); });
    socket.once('close', () => { state.waiting.length = 0; });
    return state;
  }

  function run(state, req, res) {
    state.running++;
    const unsafe = !SAFE_METHODS.has(req.method);
    if (unsafe) state.unsafeRunning = true;
    whenClosed(res, () => {
      state.running--;
      if (unsafe) state.unsafeRunning = false;
      runWaiting(state);
    });
    handler(req, res);
  }

  function runWaiting(state) {
    while (state.waiting.length > 0 && mayRun(state, state.waiting[0][0])) {
      const [req, res] = state.waiting.shift();
      run(state, req, res);
    }
    if (state.waiting.length === 0 && state.socket.isPaused() && !state.socket.destroyed) state.socket.resume();
  }
}

module.exports = { boundPipelining };
