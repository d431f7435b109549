'use strict';
// The HTTP/2 listener's sessions: the bounds svr keeps on each, and the response class its
// requests are answered with. Everything here runs per stream on the busiest path there is, so
// what can be decided once is: one shared 'stream' and 'close' listener instead of closures per
// stream, one idle timer per session that is never cleared or re-created per request.
//
//   trackSessions(server, { idleMs, maxStreams, sendTimeoutMs }) -> { drain() }
//     idleMs: a session with no open stream for idleMs gets a GOAWAY (graceful, as nginx's
//       keepalive_timeout; Node's own session timeout would destroy streams in flight);
//     maxStreams: the stream that reaches it is served, then a GOAWAY (0: no bound);
//     sendTimeoutMs: a stream whose waiting output has not moved for this long is reset
//       (http2-send-timeout.js; 0: never);
//     drain(): a GOAWAY to every session, and to each new one.
//   responseClass(http2) -> the Http2ServerResponse subclass given to createSecureServer, with
//     respondWhole(status, headers, body?) for answers ready in full

const { deferringResponse, applyDeferred } = require('../http/response');
const { watchSends } = require('./http2-send-timeout');
const { sweepEveryMs } = require('./keep-alive');

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
//   The head is one plain object: the headers already set on the response, then `headers` (made
//   by svr, never taken from a request), their names lower-cased once per header object (the
//   static stage gives the same object for every response of a file version, with the site's
//   fixed headers folded in while they wait: http/response.js, whose waiting headers and close
//   slot this class has too). Setting them one by one and copying them out again cost about 2 µs
//   per response. Once that head is sent, the header readers answer from it, as they would have
//   had the headers been set.
function responseClass(http2) {
  const base = http2.Http2ServerResponse.prototype;
  // Below the waiting headers (http/response.js), so that they are set through the filter too.
  class FilteredResponse extends http2.Http2ServerResponse {
    setHeader(name, value) {
      if (typeof name === 'string' && CONNECTION_HEADERS.has(name.toLowerCase())) return this;
      return super.setHeader(name, value);
    }
  }
  return class SvrHttp2Response extends deferringResponse(FilteredResponse) {
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
      applyDeferred(this);
      this.statusCode = status; // what the access log and metrics read
      const head = { ':status': status };
      const set = base.getHeaderNames.call(this);
      for (let i = 0; i < set.length; i++) head[set[i]] = base.getHeader.call(this, set[i]);
      Object.assign(head, lowerCased(headers));
      this.endedWhole = true;
      this.sentHead = head;
      stream.respond(head, { endStream: body === undefined, sendDate: this.sendDate });
      if (body !== undefined) stream.end(body);
      return this;
    }

    getHeader(name) {
      if (this.sentHead === undefined) return super.getHeader(name);
      if (typeof name !== 'string') return super.getHeader(name); // Node's own type error
      const key = name.trim().toLowerCase();
      return key[0] === ':' ? undefined : this.sentHead[key];
    }

    getHeaderNames() {
      return this.sentHead === undefined ? super.getHeaderNames() : Object.keys(this.sentHead).filter((key) => key[0] !== ':');
    }

    getHeaders() {
      if (this.sentHead === undefined) return super.getHeaders();
      const headers = { __proto__: null };
      for (const key of this.getHeaderNames()) headers[key] = this.sentHead[key];
      return headers;
    }

    hasHeader(name) {
      return this.sentHead === undefined ? super.hasHeader(name) : this.getHeader(name) !== undefined;
    }

    get writableEnded() {
      return this.endedWhole === true || super.writableEnded;
    }

    get finished() {
      return this.endedWhole === true || super.finished;
    }
  };
}

// headers with lower-case names, made once per header object (a file version's headers are one
// object for every response) and kept as long as that object lives.
const lowered = new WeakMap();
function lowerCased(headers) {
  let out = lowered.get(headers);
  if (out === undefined) {
    out = {};
    for (const name of Object.keys(headers)) out[name.toLowerCase()] = headers[name];
    lowered.set(headers, out);
  }
  return out;
}

function trackSessions(server, { idleMs, maxStreams, sendTimeoutMs = 0 }) {
  const sessions = new Set();
  let draining = false;
  const sends = sendTimeoutMs > 0 ? watchSends(sessions, sendTimeoutMs) : null;
  if (sends !== null) sweepEvery(server, sends.sweep, sweepEveryMs(sendTimeoutMs));

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
    if (sends !== null) sends.streamClosed(this);
  }

  function onStream(stream) {
    const state = this[kState];
    state.open++;
    if (++state.started === maxStreams) this.close();
    stream[kState] = state;
    stream.on('close', onStreamClose); // 'close' comes once: on() spares once()'s wrapper
    if (sends !== null) sends.stream(this, stream);
  }

  function onSessionClose() {
    clearTimeout(this[kState].timer);
    sessions.delete(this);
  }

  server.on('session', (session) => {
    if (draining) { session.close(); return; }
    sessions.add(session);
    session[kState] = { open: 0, started: 0, idleSince: Date.now(), timer: idleMs ? arm(session, idleMs) : null };
    if (sends !== null) sends.session(session);
    // Before Node's own listener, which hands the stream to the request handler: a script may
    // write its whole answer at once, and the send timeout counts writes from the first.
    session.prependListener('stream', onStream);
    session.on('close', onSessionClose);
  });

  return {
    drain() {
      draining = true;
      for (const session of sessions) session.close();
    },
  };
}

// sweep(now) every `ms` for as long as the server is open.
function sweepEvery(server, sweep, ms) {
  const timer = setInterval(() => sweep(Date.now()), ms);
  timer.unref();
  server.on('close', () => clearInterval(timer));
}

module.exports = { trackSessions, responseClass, CONNECTION_HEADERS };
