'use strict';
// A parsePostData call on a request made in memory, for tests of lib/pipeline/scripting/post-data.js
// without a server: a POST whose body arrives in one chunk (as a socket may deliver 64 KiB at
// once), and a response whose 'close' the test emits.
//
//   const { parsed, res } = postInMemory(body, { contentType, tempDir, limit })
//   parsed resolves with { fields, files }, or rejects with an Error whose status is what svr
//   would answer; res.emit('close') ends the response (its files are then removed).

const { EventEmitter } = require('node:events');
const { PassThrough } = require('node:stream');
const { createParsePostData } = require('../../lib/pipeline/scripting/post-data');

function postInMemory(body, { contentType, tempDir, limit = 200 * 1024 * 1024 }) {
  const req = new PassThrough();
  req.method = 'POST';
  req.headers = { 'content-type': contentType, 'content-length': String(body.length) };
  const res = new EventEmitter();
  res.setHeader = () => {};
  const parsed = new Promise((resolve, reject) => {
    const fail = (status, error) => reject(Object.assign(new Error(`answered ${status}: ${error?.message}`), { status }));
    createParsePostData(req, res, { limit, fail, tempDir })((fields, files) => resolve({ fields, files }));
  });
  req.end(body);
  return { parsed, res };
}

module.exports = { postInMemory };
