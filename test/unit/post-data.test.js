'use strict';
// lib/pipeline/scripting/post-data.js: reading and parsing a buffered request body, called
// directly (a request is an EventEmitter with headers). Multipart, streamed through busboy, is
// tested over sockets in server-side-script.test.js.

const { describe, test } = require('node:test');
const assert = require('node:assert/strict');
const { EventEmitter } = require('node:events');
const { readBody, parseBody, BodyError, createBodyBudget } = require('../../lib/pipeline/scripting/post-data');

function fakeRequest(headers = {}) {
  const req = new EventEmitter();
  req.headers = headers;
  return req;
}

function read(req, limit) {
  return new Promise((resolve) => readBody(req, limit, (error, body) => resolve({ error, body })));
}

describe('readBody', () => {
  test('gathers the chunks', async () => {
    const req = fakeRequest();
    const done = read(req, 10);
    req.emit('data', Buffer.from('abc'));
    req.emit('data', Buffer.from('de'));
    req.emit('end');
    const { error, body } = await done;
    assert.equal(error, null);
    assert.equal(body.toString(), 'abcde');
  });

  test('a declared Content-Length over the limit is 413 before anything is read', async () => {
    const { error } = await read(fakeRequest({ 'content-length': '11' }), 10);
    assert.ok(error instanceof BodyError);
    assert.equal(error.status, 413);
    assert.match(error.message, /the body \(11 bytes\) is larger than maxPostDataSize \(10\)/);
  });

  test('a body that grows over the limit is 413, once', async () => {
    const req = fakeRequest();
    let calls = 0;
    const done = new Promise((resolve) => readBody(req, 4, (error) => { calls++; resolve(error); }));
    req.emit('data', Buffer.from('abc'));
    req.emit('data', Buffer.from('de'));
    req.emit('end');
    const error = await done;
    assert.equal(error.status, 413);
    assert.equal(calls, 1);
  });

  test('an aborted or failing request is 400', async () => {
    const aborted = fakeRequest();
    const first = read(aborted, 10);
    aborted.emit('aborted');
    assert.equal((await first).error.status, 400);
    const failing = fakeRequest();
    const second = read(failing, 10);
    failing.emit('error', new Error('reset'));
    const { error } = await second;
    assert.equal(error.status, 400);
    assert.match(error.message, /cannot read the body: reset/);
  });
});

describe('parseBody', () => {
  test('urlencoded: repeated names give arrays', () => {
    const parsed = parseBody(Buffer.from('a=1&b=two+words&a=3'), 'application/x-www-form-urlencoded; charset=utf-8');
    assert.deepEqual(parsed, { fields: { a: ['1', '3'], b: 'two words' }, files: {}, tempFiles: [] });
  });

  test('JSON and +json: the object is the fields; an empty body is {}; invalid JSON is 400', () => {
    assert.deepEqual(parseBody(Buffer.from('{"n":5}'), 'Application/JSON').fields, { n: 5 });
    assert.deepEqual(parseBody(Buffer.from('{"n":5}'), 'application/ld+json').fields, { n: 5 });
    assert.deepEqual(parseBody(Buffer.alloc(0), 'application/json').fields, {});
    assert.deepEqual(parseBody(Buffer.from('[1,2]'), 'application/json').fields, {}, 'not an object: no fields');
    assert.throws(() => parseBody(Buffer.from('{'), 'application/json'), (error) => error.status === 400 && /invalid JSON body/.test(error.message));
  });

  test('another type gives no fields and no files', () => {
    assert.deepEqual(parseBody(Buffer.from('plain'), 'text/plain'), { fields: {}, files: {}, tempFiles: [] });
    assert.deepEqual(parseBody(Buffer.from('plain'), undefined), { fields: {}, files: {}, tempFiles: [] });
  });
});

test('createBodyBudget: a positive integer is the budget; anything else is no limit', () => {
  assert.deepEqual(createBodyBudget(1000), { max: 1000, used: 0 });
  for (const max of [0, -1, 1.5, undefined, '1000']) assert.equal(createBodyBudget(max).max, Infinity, String(max));
});

describe('createParsePostData', () => {
  // Made for every request a script sees: the temporary directory (os.tmpdir(), 18 syscalls)
  // is asked for only when a multipart body is parsed.
  test('building parsePostData, and a GET refused by it, never ask for the temporary directory', () => {
    const os = require('node:os');
    const { createParsePostData } = require('../../lib/pipeline/scripting/post-data');
    const real = os.tmpdir;
    let asked = 0;
    os.tmpdir = () => { asked++; return real(); };
    try {
      const refused = [];
      const parsePostData = createParsePostData({ method: 'GET', headers: {} }, {}, { limit: 1024, fail: (status) => refused.push(status) });
      parsePostData(() => assert.fail('a GET has no body to parse'));
      assert.deepEqual(refused, [405]);
      assert.equal(asked, 0);
    } finally {
      os.tmpdir = real;
    }
  });
});

describe('a multipart body cut short or unreadable', () => {
  // busboy destroys the open part's stream with "Unexpected end of form": a part stream without an
  // 'error' listener made that an uncaught exception, and the worker was replaced (an attack run:
  // 15 such requests, 8 workers replaced; --single-threaded stopped).
  const fs = require('node:fs');
  const os = require('node:os');
  const path = require('node:path');
  const { postInMemory } = require('../support/post-data-request');
  const { waitUntil } = require('../support/helpers');
  const BOUNDARY = 'B';
  const part = (i) => `--${BOUNDARY}\r\nContent-Disposition: form-data; name="f${i}"; filename="f${i}"\r\n\r\nxxxxxx\r\n`;

  // The status svr answers with, or 'parsed'.
  const post = (body, tempDir) => postInMemory(body, { contentType: `multipart/form-data; boundary=${BOUNDARY}`, tempDir, limit: 1024 * 1024 })
    .parsed.then(() => 'parsed', (error) => error.status);

  test('a field in a charset busboy cannot decode: 400, not a 500 with a stack trace', async () => {
    const tempDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svr-test-charset-'));
    try {
      const body = part(0) + `--${BOUNDARY}\r\nContent-Disposition: form-data; name="x"\r\nContent-Type: text/plain; charset=bogus-xyz\r\n\r\nabc\r\n--${BOUNDARY}--\r\n`;
      assert.equal(await post(Buffer.from(body), tempDir), 400);
      assert.ok(await waitUntil(() => fs.readdirSync(tempDir).length === 0, 10000), `left: ${fs.readdirSync(tempDir)}`);
    } finally {
      fs.rmSync(tempDir, { recursive: true, force: true });
    }
  });

  for (const [what, body] of [
    ['its only part', `--${BOUNDARY}\r\nContent-Disposition: form-data; name="f"; filename="a"\r\n\r\nxxxxxx`],
    ['the last of 5 parts (some still waiting for a write slot)', [0, 1, 2, 3].map(part).join('') + `--${BOUNDARY}\r\nContent-Disposition: form-data; name="f4"; filename="f4"\r\n\r\nxx`],
  ]) {
    test(`${what}: 400, no uncaught error, no file left`, async () => {
      const tempDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svr-test-truncated-'));
      try {
        assert.equal(await post(Buffer.from(body), tempDir), 400);
        assert.ok(await waitUntil(() => fs.readdirSync(tempDir).length === 0, 10000), `left: ${fs.readdirSync(tempDir)}`);
      } finally {
        fs.rmSync(tempDir, { recursive: true, force: true });
      }
    });
  }
});
