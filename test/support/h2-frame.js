'use strict';
// One raw HTTP/2 frame (RFC 9113 §4.1), for tests whose client must misbehave in ways Node's
// http2 client will not: a 9-byte head (length, type, flags, stream id) and the payload.

function frame(type, flags, streamId, payload = Buffer.alloc(0)) {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(streamId, 5);
  return Buffer.concat([head, payload]);
}

module.exports = { frame };
