'use strict';
// Bodies on HTTP/2 streams are written in small slices, so that a client cancelling downloads
// keeps its session.
//
// Node counts the bytes of the write it has queued for a stream against the session's
// maxSessionMemory (10 MB), and when the client resets the stream before they are sent it drops
// them without taking them off the count. One 256 KiB chunk left about 200 KB counted per
// cancelled download: after about 150 the session's allocator refused and Node ended the session
// (GOAWAY INTERNAL_ERROR, "The user callback function failed"). One write is queued at a time, so
// SLICE_BYTES (one DATA frame at the default frame size) bounds what a cancel leaves counted;
// http2MaxRequestsPerConnection (net/tls-context.js) bounds the cancels on one session.

const SLICE_BYTES = 16 * 1024;

function isHttp2(res) {
  return res.stream !== undefined && res.stream !== null && typeof res.stream.respondWithFD === 'function';
}

// An HTTP/2 answer whose head and body are ready in full (body undefined: none, as a 304). One
// slice or less goes out in one go through the listener's respondWhole (net/http2-sessions.js:
// no empty DATA frame after the body) when the response has it; a larger body in slices.
function answerHttp2(res, status, headers, body) {
  if (typeof res.respondWhole === 'function' && (body === undefined || body.length <= SLICE_BYTES)) return res.respondWhole(status, headers, body);
  res.writeHead(status, headers);
  return body === undefined ? res.end() : endInSlices(res, body);
}

// res.end(body), in slices when it is larger than one.
function endInSlices(res, body) {
  if (body.length <= SLICE_BYTES) return res.end(body);
  let offset = 0;
  const writeMore = () => {
    while (offset < body.length && !res.destroyed) {
      const slice = body.subarray(offset, offset + SLICE_BYTES);
      offset += slice.length;
      if (offset >= body.length) return res.end(slice);
      if (!res.write(slice)) return res.once('drain', writeMore);
    }
    return undefined;
  };
  return writeMore();
}

module.exports = { isHttp2, answerHttp2, endInSlices, SLICE_BYTES };
