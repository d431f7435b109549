'use strict';
// A body read whole (requestBuffering) is sent again from its first byte on each try of another
// upstream: open() gives a new stream each time, from memory or from its file, also after an
// earlier stream was read to its end (a reused connection reset after the whole body went) or
// destroyed; dispose() closes the file. A file that cannot be read back whole (cut short, an I/O
// error) fails the stream: it never ends short, which would send a body shorter than its
// Content-Length.

const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const { PassThrough } = require('node:stream');
const { bufferRequestBody, BODY_MEMORY_BYTES } = require('../../lib/pipeline/upstream/request-body');
const { openBodyFiles, bodyFileLinks } = require('../support/body-files');
const { waitUntil } = require('../support/helpers');

function buffered(bytes) {
  const req = new PassThrough();
  req.headers = {};
  return new Promise((resolve, reject) => {
    bufferRequestBody(req, {}, (error, body) => (error ? reject(error) : resolve(body)));
    req.end(bytes);
  });
}

const readAll = async (stream) => Buffer.concat(await stream.toArray());

for (const [where, size] of [['memory', 1000], ['a file', 3 * BODY_MEMORY_BYTES + 7]]) {
  test(`a body in ${where} opens again from its first byte, after a stream read whole and one destroyed`, async () => {
    const bytes = crypto.randomBytes(size);
    const body = await buffered(bytes);
    assert.equal(body.length, size);
    assert.ok((await readAll(body.open())).equals(bytes), 'the first try');
    assert.ok((await readAll(body.open())).equals(bytes), 'after a stream that was read to its end');
    const cut = body.open();
    await new Promise((resolve) => cut.once('data', resolve));
    cut.destroy();
    assert.ok((await readAll(body.open())).equals(bytes), 'after a destroyed one');
    body.dispose();
    assert.ok(await waitUntil(() => openBodyFiles().length === 0, 5000), 'the file is closed');
  });
}

test('a body file cut short fails the stream that reads it: an error, no end', async () => {
  const bytes = crypto.randomBytes(3 * BODY_MEMORY_BYTES + 7);
  const body = await buffered(bytes);
  const [link] = bodyFileLinks();
  fs.truncateSync(link, 1000);
  const stream = body.open();
  let ended = false;
  stream.on('end', () => { ended = true; });
  await assert.rejects(readAll(stream), /the request body file ended early/);
  assert.equal(ended, false);
  body.dispose();
  assert.ok(await waitUntil(() => openBodyFiles().length === 0, 5000), 'the file is closed');
});
