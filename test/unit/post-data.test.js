'use strict';
// lib/pipeline/scripting/post-data.js: reading and parsing a request body, called directly
// (a request is an EventEmitter with headers; the multipart files go to a temporary directory).

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { EventEmitter } = require('node:events');
const fs = require('node:fs');
const path = require('node:path');
const { makeTempDir } = require('../support/helpers');
const { readBody, parseBody, BodyError, BODY_METHODS } = require('../../lib/pipeline/scripting/post-data');

function fakeRequest(headers = {}) {
  const req = new EventEmitter();
  req.headers = headers;
  return req;
}

function read(req, limit) {
  return new Promise((resolve) => readBody(req, limit, (error, body) => resolve({ error, body })));
}

test('BODY_METHODS: the methods a script may read a body for', () => {
  assert.deepEqual([...BODY_METHODS].sort(), ['PATCH', 'POST', 'PUT']);
});

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
  let dir;
  before(() => { dir = makeTempDir('svr-post-data-'); });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  test('urlencoded: repeated names give arrays', () => {
    const parsed = parseBody(Buffer.from('a=1&b=two+words&a=3'), 'application/x-www-form-urlencoded; charset=utf-8', dir);
    assert.deepEqual(parsed, { fields: { a: ['1', '3'], b: 'two words' }, files: {}, tempFiles: [] });
  });

  test('JSON and +json: the object is the fields; an empty body is {}; invalid JSON is 400', () => {
    assert.deepEqual(parseBody(Buffer.from('{"n":5}'), 'Application/JSON', dir).fields, { n: 5 });
    assert.deepEqual(parseBody(Buffer.from('{"n":5}'), 'application/ld+json', dir).fields, { n: 5 });
    assert.deepEqual(parseBody(Buffer.alloc(0), 'application/json', dir).fields, {});
    assert.deepEqual(parseBody(Buffer.from('[1,2]'), 'application/json', dir).fields, {}, 'not an object: no fields');
    assert.throws(() => parseBody(Buffer.from('{'), 'application/json', dir), (error) => error.status === 400 && /invalid JSON body/.test(error.message));
  });

  test('another type gives no fields and no files', () => {
    assert.deepEqual(parseBody(Buffer.from('plain'), 'text/plain', dir), { fields: {}, files: {}, tempFiles: [] });
    assert.deepEqual(parseBody(Buffer.from('plain'), undefined, dir), { fields: {}, files: {}, tempFiles: [] });
  });

  test('multipart: fields, repeated fields and a file written to the temporary directory', () => {
    const body = Buffer.from([
      '--XyZ', 'Content-Disposition: form-data; name="title"', '', 'hello',
      '--XyZ', 'Content-Disposition: form-data; name="tag"', '', 'a',
      '--XyZ', 'Content-Disposition: form-data; name="tag"', '', 'b',
      '--XyZ', 'Content-Disposition: form-data; name="upload"; filename="C:\\docs\\note.txt"', 'Content-Type: text/plain', '', 'file body',
      '--XyZ--', '',
    ].join('\r\n'));
    const parsed = parseBody(body, 'multipart/form-data; boundary="XyZ"', dir);
    assert.deepEqual(parsed.fields, { title: 'hello', tag: ['a', 'b'] });
    const file = parsed.files.upload;
    assert.equal(file.originalFilename, 'note.txt');
    assert.equal(file.mimetype, 'text/plain');
    assert.equal(file.size, 9);
    assert.equal(path.dirname(file.filepath), dir);
    assert.equal(fs.readFileSync(file.filepath, 'utf8'), 'file body');
    assert.deepEqual(parsed.tempFiles, [file.filepath]);
  });

  test('malformed multipart is 400 with a reason', () => {
    const cases = {
      'multipart/form-data': ['x', /without a boundary/],
      'multipart/form-data; boundary=B': ['no delimiter here', /without its boundary/],
    };
    for (const [type, [text, message]] of Object.entries(cases)) {
      assert.throws(() => parseBody(Buffer.from(text), type, dir), (error) => error.status === 400 && message.test(error.message), type);
    }
    const unterminated = ['--B', 'Content-Disposition: form-data; name="f"; filename="a.txt"', '', 'data'].join('\r\n');
    assert.throws(() => parseBody(Buffer.from(unterminated), 'multipart/form-data; boundary=B', dir), /closing boundary/);
    const nameless = ['--B', 'Content-Disposition: form-data', '', 'x', '--B--'].join('\r\n');
    assert.throws(() => parseBody(Buffer.from(nameless), 'multipart/form-data; boundary=B', dir), /without a name/);
  });
});
