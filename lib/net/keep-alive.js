'use strict';
// keepAliveTimeout for HTTP/1 connections: svr's worker closes idle keep-alive connections with
// one sweep a few times a second, instead of Node's timer per response.
//
// Why: Node's HTTP server arms a socket timeout (keepAliveTimeout + 1 s) as each response finishes
// and clears it when the next request arrives: a new timer, a bound function and two trips through
// the timer list per request, on every keep-alive request svr answers. The worker already knows,
// per connection, whether a request is in flight and when the last response closed
// (process/worker.js), so svr gives its servers keepAliveTimeout 0 (Node arms nothing) and sweeps.
//
// What stays as Node does it: clients are told the timeout (Keep-Alive: timeout=N, in seconds) and
// the connection lasts KEEP_ALIVE_GRACE_MS longer, so a client that reuses it at its last moment is
// not cut; bytes received while idle (a next request on its way) restart the wait. A connection is
// closed by the first sweep after that, within one sweep interval (a tenth of keepAliveTimeout,
// between 50 ms and 1 s) of the moment Node would close it, or two when its bytes came just before.
// HTTP/2 sessions have their own idle timer (http2-sessions.js); a connection that has not sent a
// request yet has the silent-connection timer (silent-connections.js); a tunnel (an upgrade,
// CONNECT) counts as a request in flight until it closes.
//
//   advertisingResponse(Base, keepAliveMs) -> class   Base, whose responses announce keepAliveMs
//                                                     although the server's keepAliveTimeout is 0
//   sweepEveryMs(keepAliveMs) -> ms
//   keepAliveSweeper(sockets, keepAliveMs) -> sweep(now)   sockets: Map socket -> the worker's state
//                                                     ({ active, idleSince, h2, used, readAtSweep,
//                                                     heardAt }); sweep closes what has been idle too long

const KEEP_ALIVE_GRACE_MS = 1000; // as Node's HTTP server (its keepAliveTimeoutBuffer)
const MIN_SWEEP_MS = 50;
const MAX_SWEEP_MS = 1000;

// Node writes "Keep-Alive: timeout=N" from the response's _keepAliveTimeout, which it copies from
// the server's keepAliveTimeout as each request arrives; here the copy is ignored.
function advertisingResponse(Base, keepAliveMs) {
  class KeepAliveResponse extends Base {}
  Object.defineProperty(KeepAliveResponse.prototype, '_keepAliveTimeout', {
    get() { return keepAliveMs; },
    set() {},
  });
  return KeepAliveResponse;
}

function sweepEveryMs(keepAliveMs) {
  return Math.min(MAX_SWEEP_MS, Math.max(MIN_SWEEP_MS, Math.round(keepAliveMs / 10)));
}

function keepAliveSweeper(sockets, keepAliveMs) {
  let previousSweep = 0;
  return function sweep(now) {
    const quietSince = now - keepAliveMs - KEEP_ALIVE_GRACE_MS;
    for (const [socket, state] of sockets) {
      if (state.active > 0 || state.h2 || !state.used) continue;
      const read = socket.bytesRead;
      if (read !== state.readAtSweep) {
        state.readAtSweep = read;
        // Idle since before the last sweep, yet bytes came: a next request on its way. (Otherwise
        // they may be the request whose response closed since; its close started the wait.)
        if (state.idleSince < previousSweep) state.heardAt = now;
      }
      if (state.idleSince <= quietSince && state.heardAt <= quietSince) socket.destroy();
    }
    previousSweep = now;
  };
}

module.exports = { advertisingResponse, sweepEveryMs, keepAliveSweeper, KEEP_ALIVE_GRACE_MS };
