'use strict';
// The HTTP/2 listener's sessions: the bounds svr keeps on each, and the response class its
// requests are answered with. Everything here runs per stream on the busiest path there is, so
// what can be decided once is: one shared 'stream' and 'close' listener instead of closures per
// stream, one idle timer per session that is never cleared or re-created per request.
//
//   trackSessions(server, { idleMs, maxStreams }) -> { drain() }
//     idleMs: a session with no open stream for idleMs gets a GOAWAY (graceful, as nginx's
//       keepalive_timeout; Node's own session timeout would destroy streams in flight);
//     maxStreams: the stream that reaches it is served, then a GOAWAY (0: no bound);
//     drain(): a GOAWAY to every session, and to each new one.
//   responseClass(http2) -> the Http2ServerResponse subclass given to createSecureServer, with
//     respondWhole(status, headers, body?) for answers ready in full

const kState = Symbol('svr.http2Session');

// HTTP/1.1 connection-level headers, which HTTP/2 forbids (RFC 9113 §8.2.2).
const CONNECTION_HEADERS = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade']);

// The response class of svr's HTTP/2 requests, made once:
// - a Connection header set by the pipeline, a mod or a script is quietly left out (Node would
//   drop it too, but with a process warning on stderr);
// - respondWhole(status, headers, body?) answers with a head and a body that are ready in full
//   (a file from memory, a 304) as Node's core API does: HEADERS, then one DATA frame that ends
//   the stream (no body: HEADERS alone end it). The compatibility API's writeHead always asks
//   Node to wait for trailers (for res.addTrailers), so its end(body) sends the body and then, a
//   turn of the event loop later, an empty DATA frame to end the stream: one more TLS record, write
//   and epoll update per response. Where trailers were asked for, the head is already out or the
//   request is a HEAD, it falls back to writeHead and end.
function responseClass(http2) {
  return class SvrHttp2Response extends http2.Http2ServerResponse {
    setHeader(name, value) {
      if (typeof name === 'string' && CONNECTION_HEADERS.has(name.toLowerCase())) return this;
      return super.setHeader(name, value);
    }

    addTrailers(headers) {
      this.trailersAsked = true;
      return super.addTrailers(headers);
    }

    setTrailer(name, value) {
      this.trailersAsked = true;
      return super.setTrailer(name, value);
    }

    respondWhole(status, headers, body) {
      const stream = this.stream;
      if (this.trailersAsked === true || this.headersSent || stream.headRequest || stream.destroyed || stream.closed) {
        this.writeHead(status, headers);
        return body === undefined ? this.end() : this.end(body);
      }
      this.statusCode = status; // what the access log and metrics read
      for (const name of Object.keys(headers)) this.setHeader(name, headers[name]);
      const head = this.getHeaders();
      head[':status'] = status;
      this.endedWhole = true;
      stream.respond(head, { endStream: body === undefined, sendDate: this.sendDate });
      if (body !== undefined) stream.end(body);
      return this;
    }

    get writableEnded() {
      return this.endedWhole === true || super.writableEnded;
    }

    get finished() {
      return this.endedWhole === true || super.finished;
    }
  };
}

function trackSessions(server, { idleMs, maxStreams }) {
  const sessions = new Set();
  let draining = false;

  // The idle timer fires at most once per idleMs: it closes the session when no stream has been
  // open for idleMs, else it waits for the rest of that time.
  function onIdleTimer(session) {
    const state = session[kState];
    if (session.closed || session.destroyed) return;
    if (state.open > 0) { state.timer = arm(session, idleMs); return; }
    const idleFor = Date.now() - state.idleSince;
    if (idleFor >= idleMs) session.close();
    else state.timer = arm(session, idleMs - idleFor);
  }

  function arm(session, ms) {
    const timer = setTimeout(onIdleTimer, ms, session);
    timer.unref();
    return timer;
  }

  function onStreamClose() {
    const state = this[kState];
    if (--state.open === 0 && idleMs) state.idleSince = Date.now();
  }

  function onStream(stream) {
    const state = this[kState];
    state.open++;
    if (++state.started === maxStreams) this.close();
    stream[kState] = state;
    stream.on('close', onStreamClose); // 'close' comes once: on() spares once()'s wrapper
  }

  function onSessionClose() {
    clearTimeout(this[kState].timer);
    sessions.delete(this);
  }

  server.on('session', (session) => {
    if (draining) { session.close(); return; }
    sessions.add(session);
    session[kState] = { open: 0, started: 0, idleSince: Date.now(), timer: idleMs ? arm(session, idleMs) : null };
    session.on('stream', onStream);
    session.on('close', onSessionClose);
  });

  return {
    drain() {
      draining = true;
      for (const session of sessions) session.close();
    },
  };
}

module.exports = { trackSessions, responseClass, CONNECTION_HEADERS };
