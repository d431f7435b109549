'use strict';
// A CGI response (RFC 3875 section 6), as a FastCGI application or a CGI script writes it: a header
// block, a blank line, the body. Shared by both gateways.
//
//   const out = new CgiResponse(req, res, { fail(status, reason), localRedirect(location), maxHeaderBytes,
//                                           onHead, onGone })
//   out.push(chunk) -> false when the client's buffer is full (wait for res 'drain', then go on)
//   out.end()       the script's output ended
//   out.headersSent  whether the status line has gone to the client
//   The response cache's hooks (../cache/fetch.js), both optional: onHead({ statusCode }, headers)
//   before the head goes to the client -> 'handled' (the cache answered the client: the rest of
//   the output is dropped) | a tap { data(chunk), end(), abort() } that sees the body as the
//   client gets it | null; onGone() when the client went away before any head.
//
// The header block: `Status: 404 Not Found` sets the status (200 without it); `Location:` with an
// absolute URL is a redirect to the client (302 unless Status says otherwise); `Location: /path`
// as the only header and no body is a local redirect: the server answers as if /path had been
// asked for (localRedirect; RFC 3875 6.2.2); repeated headers (Set-Cookie) are all sent. Hop-by-hop
// headers are dropped, svr's Server header stands. A header block that is missing, malformed (a
// control character other than HTAB in a line included) or larger than maxHeaderBytes is the
// gateway's failure: fail(502, reason), never the script's text to the client. A Content-Length
// the body then exceeds or falls short of cuts the connection rather than sending a response the
// client would misread.

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'te', 'trailer', 'upgrade',
  'proxy-connection', 'proxy-authenticate', 'http2-settings', 'server']);
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// What Node refuses in a reason phrase or header value (all but HTAB of C0, and DEL). Checked
// here, before writeHead: a writeHead that throws has already taken the bad reason phrase, which
// would then break the error page too.
const CONTROL_CHARACTER = /[\x00-\x08\x0a-\x1f\x7f]/;
const DEFAULT_MAX_HEADER_BYTES = 65536;

class CgiResponse {
  constructor(req, res, { fail, localRedirect, maxHeaderBytes = DEFAULT_MAX_HEADER_BYTES, onHead = null, onGone = null }) {
    this.req = req;
    this.res = res;
    this.fail = fail;
    this.localRedirect = localRedirect;
    this.maxHeaderBytes = maxHeaderBytes;
    this.head = [];
    this.headBytes = 0;
    this.headersSent = false;
    this.redirecting = null; // a local redirect waits for the end of the output (which must be empty)
    this.done = false;
    this.declaredLength = -1;
    this.bodyBytes = 0;
    this.onHead = onHead;
    this.tap = null;
    this.tapEnded = false;
    if (onHead !== null) {
      res.once('close', () => {
        if (this.tap !== null) {
          if (!this.tapEnded) this.tap.abort(); // the client went away before the end
        } else if (onGone !== null && !this.headersSent) {
          onGone();
        }
      });
    }
  }

  push(chunk) {
    if (this.done) return true;
    if (this.headersSent) return this.writeBody(chunk);
    if (this.redirecting !== null) {
      if (chunk.length) this.redirecting = false; // a body: not a local redirect after all
      return true;
    }
    this.head.push(chunk);
    this.headBytes += chunk.length;
    const all = this.head.length === 1 ? chunk : Buffer.concat(this.head);
    this.head = [all];
    const end = headerEnd(all);
    if (end === null) {
      if (this.headBytes > this.maxHeaderBytes) this.abandon(502, `a header block larger than ${this.maxHeaderBytes} bytes`);
      return true;
    }
    this.head = null;
    return this.startResponse(all.subarray(0, end.at).toString('latin1'), all.subarray(end.at + end.length));
  }

  end() {
    if (this.done) return;
    if (this.redirecting) {
      this.done = true;
      this.localRedirect(this.redirecting);
      return;
    }
    if (!this.headersSent) {
      if (this.redirecting === false) return this.abandon(502, 'a local redirect (Location: /path) with a body');
      return this.abandon(502, this.headBytes > 0 ? 'the output ended inside the header block' : 'no output');
    }
    this.done = true;
    if (this.declaredLength !== -1 && this.bodyBytes !== this.declaredLength) {
      this.res.destroy(); // shorter than its Content-Length: the client must not take it as whole
      return;
    }
    if (this.req.svr) this.req.svr.bodyBytes = this.bodyBytes;
    if (this.tap !== null) {
      this.tapEnded = true;
      this.tap.end();
    }
    this.res.end();
  }

  abandon(status, reason) {
    this.done = true;
    if (this.tap !== null) this.tap.abort();
    this.fail(status, reason);
  }

  startResponse(text, rest) {
    const parsed = parseHeaderBlock(text);
    if (parsed.error) return this.abandon(502, parsed.error), true;
    const { status, message, headers, location, count } = parsed;
    if (location !== undefined && location.startsWith('/') && !location.startsWith('//') && count === 1 && status === null) {
      this.redirecting = rest.length ? false : location;
      if (this.redirecting === false) this.abandon(502, 'a local redirect (Location: /path) with a body');
      return true;
    }
    const code = status !== null ? status : location !== undefined ? 302 : 200;
    const bodyless = this.req.method === 'HEAD' || code === 204 || code === 304;
    if (headers['content-length'] !== undefined && !bodyless) {
      const declared = /^\d+$/.test(headers['content-length']) ? Number(headers['content-length']) : NaN;
      if (!Number.isSafeInteger(declared)) return this.abandon(502, `an invalid Content-Length: ${headers['content-length']}`), true;
      this.declaredLength = declared;
    }
    if (this.onHead !== null) {
      const tap = this.onHead({ statusCode: code, resume() {} }, headers);
      if (tap === 'handled') {
        this.done = true; // the caller stops reading the output
        return true;
      }
      this.tap = tap || null;
    }
    try {
      // HTTP/2 has no reason phrase (Node warns when given one).
      this.res.writeHead(code, this.req.httpVersionMajor >= 2 ? undefined : message || undefined, headers);
    } catch (error) { // a value Node will not send (HTTP/2 is stricter than HTTP/1)
      return this.abandon(502, `an unusable header: ${error.message}`), true;
    }
    this.headersSent = true;
    if (rest.length) return this.writeBody(rest);
    if (typeof this.res.flushHeaders === 'function') this.res.flushHeaders(); // a slow body: the client sees the status now
    return true;
  }

  writeBody(chunk) {
    this.bodyBytes += chunk.length;
    if (this.declaredLength !== -1 && this.bodyBytes > this.declaredLength) {
      this.done = true;
      if (this.tap !== null) this.tap.abort();
      this.res.destroy(); // longer than its Content-Length: the rest would be read as a response
      return true;
    }
    if (this.tap !== null) this.tap.data(chunk);
    return this.res.write(chunk);
  }
}

// -> { at, length } of the blank line ending the header block, or null.
function headerEnd(buf) {
  const crlf = buf.indexOf('\r\n\r\n');
  const lf = buf.indexOf('\n\n');
  if (crlf === -1 && lf === -1) return null;
  if (lf === -1 || (crlf !== -1 && crlf < lf)) return { at: crlf, length: 4 };
  return { at: lf, length: 2 };
}

// -> { status, message, headers, location, count } or { error }.
function parseHeaderBlock(text) {
  const headers = {};
  let status = null;
  let message = '';
  let location;
  let count = 0;
  for (const line of text.split(/\r?\n/)) {
    if (CONTROL_CHARACTER.test(line)) return { error: `a control character in a header line: ${quoted(line)}` };
    const colon = line.indexOf(':');
    const name = colon > 0 ? line.slice(0, colon).trim() : '';
    if (!TOKEN.test(name)) return { error: `a malformed header line: ${quoted(line)}` };
    const value = line.slice(colon + 1).trim();
    const lower = name.toLowerCase();
    count++;
    if (lower === 'status') {
      const m = /^([1-5]\d\d)(?:\s+(.*))?$/.exec(value);
      if (!m || Number(m[1]) < 200) return { error: `an invalid Status: ${quoted(value)}` };
      status = Number(m[1]);
      message = m[2] || '';
      continue;
    }
    if (lower === 'location') location = value;
    if (HOP_BY_HOP.has(lower) || lower.startsWith('proxy-')) continue;
    if (headers[lower] === undefined) headers[lower] = value;
    else if (lower === 'set-cookie' || Array.isArray(headers[lower])) headers[lower] = [].concat(headers[lower], value);
    else headers[lower] = `${headers[lower]}, ${value}`;
  }
  return { status, message, headers, location, count };
}

// The start of a line for the log, quoted, its control characters escaped (JSON leaves DEL as is).
function quoted(text) {
  return JSON.stringify(text.slice(0, 80)).replace(/\x7f/g, '\\u007f');
}

module.exports = { CgiResponse, parseHeaderBlock };
