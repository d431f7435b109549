'use strict';
// Just enough WebSocket (RFC 6455) for the load-balancer test: the handshake both ways and
// single-frame text messages (client frames masked, server frames not). Written here rather than
// adding a dependency: the test needs echo of short text messages, nothing more.

const crypto = require('node:crypto');
const http = require('node:http');

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

function acceptKey(key) {
  return crypto.createHash('sha1').update(key + GUID).digest('base64');
}

function encodeFrame(text, { mask = false, opcode = 0x1 } = {}) {
  const payload = Buffer.from(text);
  const header = [0x80 | opcode];
  const maskBit = mask ? 0x80 : 0;
  if (payload.length < 126) header.push(maskBit | payload.length);
  else header.push(maskBit | 126, payload.length >> 8, payload.length & 0xff);
  if (!mask) return Buffer.concat([Buffer.from(header), payload]);
  const key = crypto.randomBytes(4);
  const masked = Buffer.from(payload.map((byte, i) => byte ^ key[i % 4]));
  return Buffer.concat([Buffer.from(header), key, masked]);
}

// Splits buffered bytes into frames; returns { frames: [{ opcode, text }], rest }.
function decodeFrames(buffer) {
  const frames = [];
  let offset = 0;
  while (buffer.length - offset >= 2) {
    const opcode = buffer[offset] & 0x0f;
    const masked = (buffer[offset + 1] & 0x80) !== 0;
    let length = buffer[offset + 1] & 0x7f;
    let at = offset + 2;
    if (length === 126) {
      if (buffer.length < at + 2) break;
      length = buffer.readUInt16BE(at);
      at += 2;
    }
    const keyAt = at;
    if (masked) at += 4;
    if (buffer.length < at + length) break;
    let payload = buffer.subarray(at, at + length);
    if (masked) payload = Buffer.from(payload.map((byte, i) => byte ^ buffer[keyAt + (i % 4)]));
    frames.push({ opcode, text: payload.toString() });
    offset = at + length;
  }
  return { frames, rest: buffer.subarray(offset) };
}

// Server side: answers the upgrade and echoes every text frame; a close frame is echoed and ends.
function acceptEcho(req, socket) {
  socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${acceptKey(req.headers['sec-websocket-key'])}\r\n\r\n`);
  let buffered = Buffer.alloc(0);
  socket.on('data', (chunk) => {
    const { frames, rest } = decodeFrames(Buffer.concat([buffered, chunk]));
    buffered = rest;
    for (const frame of frames) {
      if (frame.opcode === 0x8) { socket.end(encodeFrame('', { opcode: 0x8 })); return; }
      if (frame.opcode === 0x1) socket.write(encodeFrame(`echo:${frame.text}`));
    }
  });
  socket.on('error', () => socket.destroy());
}

// Client side: connects, sends each message, resolves with the echoes once the close completes.
function echoSession(url, messages, timeoutMs = 5000) {
  return new Promise((resolve, reject) => {
    const key = crypto.randomBytes(16).toString('base64');
    const req = http.request(url, { headers: { Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Version': '13', 'Sec-WebSocket-Key': key }, timeout: timeoutMs });
    req.on('timeout', () => req.destroy(new Error('websocket timeout')));
    req.on('error', reject);
    req.on('response', (res) => reject(new Error(`no upgrade: HTTP ${res.statusCode}`)));
    req.on('upgrade', (res, socket, head) => {
      if (res.headers['sec-websocket-accept'] !== acceptKey(key)) return reject(new Error('bad Sec-WebSocket-Accept'));
      const echoes = [];
      let buffered = head;
      const timer = setTimeout(() => { socket.destroy(); reject(new Error('websocket echo timeout')); }, timeoutMs);
      socket.on('data', (chunk) => {
        const { frames, rest } = decodeFrames(Buffer.concat([buffered, chunk]));
        buffered = rest;
        for (const frame of frames) {
          if (frame.opcode === 0x1) echoes.push(frame.text);
          if (echoes.length === messages.length && frame.opcode === 0x1) socket.write(encodeFrame('', { mask: true, opcode: 0x8 }));
        }
      });
      socket.on('close', () => { clearTimeout(timer); resolve(echoes); });
      socket.on('error', () => {});
      for (const message of messages) socket.write(encodeFrame(message, { mask: true }));
      return undefined;
    });
    req.end();
  });
}

module.exports = { acceptEcho, echoSession, encodeFrame, decodeFrames };
