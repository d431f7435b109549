'use strict';
// Raw HTTP/2 frames (RFC 9113 §4.1), for tests whose client must misbehave in ways Node's http2
// client will not.
//   frame(type, flags, streamId, payload?) -> the frame: a 9-byte head (length, type, flags,
//     stream id) and the payload
//   readFrames(socket, onFrame): onFrame({ type, flags, payload }) for each whole frame the server
//     sends, after the server's SETTINGS are acknowledged (a client must, or the server ends the
//     connection)

const SETTINGS = 0x4;
const ACK = 0x1;

function frame(type, flags, streamId, payload = Buffer.alloc(0)) {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(streamId, 5);
  return Buffer.concat([head, payload]);
}

function readFrames(socket, onFrame) {
  let pending = Buffer.alloc(0);
  socket.on('data', (chunk) => {
    pending = Buffer.concat([pending, chunk]);
    while (pending.length >= 9) {
      const length = pending.readUIntBE(0, 3);
      if (pending.length < 9 + length) break;
      const type = pending[3];
      const flags = pending[4];
      const payload = pending.subarray(9, 9 + length);
      pending = pending.subarray(9 + length);
      if (type === SETTINGS && !(flags & ACK)) socket.write(frame(SETTINGS, ACK, 0));
      onFrame({ type, flags, payload });
    }
  });
}

module.exports = { frame, readFrames };
