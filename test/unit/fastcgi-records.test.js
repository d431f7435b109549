'use strict';
// The FastCGI record layer, checked against test/support/fake-fastcgi.js's own decoding.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { TYPE, beginRequest, paramsRecords, streamRecords, encodePairs, RecordParser } = require('../../lib/pipeline/gateway/fastcgi/records');
const { decodePairs } = require('../support/fake-fastcgi');

function header(buf) {
  return { version: buf[0], type: buf[1], id: buf.readUInt16BE(2), length: buf.readUInt16BE(4), padding: buf[6] };
}

test('BEGIN_REQUEST: role responder, keep-conn flag', () => {
  const buf = beginRequest(1, true);
  assert.deepEqual(header(buf), { version: 1, type: TYPE.BEGIN_REQUEST, id: 1, length: 8, padding: 0 });
  assert.equal(buf.readUInt16BE(8), 1);
  assert.equal(buf[10], 1);
  assert.equal(beginRequest(1, false)[10], 0);
});

test('PARAMS: short and long names and values, split over records of at most 65535 bytes, then the empty record', () => {
  const long = 'v'.repeat(200000);
  const records = paramsRecords(1, [['A', 'b'], ['LONG_NAME_'.repeat(20), 'x'], ['BIG', long], ['EMPTY', '']]);
  const last = records[records.length - 1];
  assert.deepEqual(header(last), { version: 1, type: TYPE.PARAMS, id: 1, length: 0, padding: 0 });
  const content = [];
  for (let i = 0; i < records.length - 1; i += 2) {
    const h = header(records[i]);
    assert.equal(h.type, TYPE.PARAMS);
    assert.ok(h.length <= 65535 && h.length === records[i + 1].length);
    content.push(records[i + 1]);
  }
  assert.deepEqual(decodePairs(Buffer.concat(content)), { A: 'b', ['LONG_NAME_'.repeat(20)]: 'x', BIG: long, EMPTY: '' });
});

test('STDIN: a chunk of 150000 bytes becomes three records; an empty chunk ends the stream', () => {
  const records = streamRecords(TYPE.STDIN, 1, Buffer.alloc(150000, 1));
  assert.deepEqual(records.filter((_, i) => i % 2 === 0).map((r) => header(r).length), [65535, 65535, 18930]);
  assert.deepEqual(streamRecords(TYPE.STDIN, 1, Buffer.alloc(0)).map(header), [{ version: 1, type: TYPE.STDIN, id: 1, length: 0, padding: 0 }]);
});

function record(type, content, padding = 0, id = 1) {
  const head = Buffer.from([1, type, id >> 8, id & 255, content.length >> 8, content.length & 255, padding, 0]);
  return Buffer.concat([head, content, Buffer.alloc(padding)]);
}

test('the parser hands on STDOUT/STDERR as it arrives, across any split, padding skipped; END_REQUEST decoded', () => {
  const end = Buffer.alloc(8);
  end.writeUInt32BE(7, 0);
  end[4] = 0;
  const wire = Buffer.concat([
    record(TYPE.STDOUT, Buffer.from('Content-Type: text/plain\r\n\r\nhello '), 3),
    record(TYPE.STDERR, Buffer.from('warning'), 1),
    record(TYPE.STDOUT, Buffer.from('world')),
    record(TYPE.STDOUT, Buffer.alloc(0)),
    record(TYPE.END_REQUEST, end),
  ]);
  for (const size of [1, 3, 8, 13, wire.length]) {
    const out = [];
    const err = [];
    let ended = null;
    const parser = new RecordParser({
      requestId: 1,
      onData: (type, id, bytes) => (type === TYPE.STDOUT ? out : err).push(Buffer.from(bytes)),
      onEnd: (id, appStatus, protocolStatus) => { ended = { id, appStatus, protocolStatus }; },
      onError: (error) => assert.fail(error),
    });
    for (let at = 0; at < wire.length; at += size) parser.push(wire.subarray(at, at + size));
    assert.equal(Buffer.concat(out).toString(), 'Content-Type: text/plain\r\n\r\nhello world', `chunks of ${size}`);
    assert.equal(Buffer.concat(err).toString(), 'warning');
    assert.deepEqual(ended, { id: 1, appStatus: 7, protocolStatus: 0 });
  }
});

test('the parser refuses bytes that are not FastCGI records', () => {
  let failed = null;
  const parser = new RecordParser({ requestId: 1, onData: () => assert.fail('no data'), onEnd: () => assert.fail('no end'), onError: (error) => { failed = error; } });
  parser.push(Buffer.from('HTTP/1.1 200 OK\r\n\r\n'));
  assert.match(failed.message, /not a FastCGI record/);
});

// svr sends one request per connection, with id 1: a record for another request is a server that
// mixes requests up, and none of it may become this request's response.
test('the parser refuses a record for another request id, before handing on any of it', () => {
  const end = Buffer.alloc(8);
  for (const [type, id] of [[TYPE.STDOUT, 2], [TYPE.STDERR, 257], [TYPE.END_REQUEST, 3], [TYPE.STDOUT, 0], [TYPE.END_REQUEST, 0]]) {
    let failed = null;
    const parser = new RecordParser({
      requestId: 1, onData: () => assert.fail('no data'), onEnd: () => assert.fail('no end'), onError: (error) => { failed = error; },
    });
    parser.push(record(type, type === TYPE.END_REQUEST ? end : Buffer.from('not yours'), 0, id));
    assert.match(failed && failed.message, new RegExp(`^a FastCGI record for request id ${id}, not 1$`), `type ${type} id ${id}`);
  }
});

test('a management record (id 0) is passed over: it belongs to the connection, not to a request', () => {
  const out = [];
  let ended = false;
  const parser = new RecordParser({
    requestId: 1, onData: (type, id, bytes) => out.push(Buffer.from(bytes)), onEnd: () => { ended = true; }, onError: (error) => assert.fail(error),
  });
  parser.push(Buffer.concat([
    record(TYPE.UNKNOWN_TYPE, Buffer.from([200, 0, 0, 0, 0, 0, 0, 0]), 0, 0),
    record(TYPE.GET_VALUES_RESULT, encodePairs([['FCGI_MPXS_CONNS', '0']]), 0, 0),
    record(TYPE.STDOUT, Buffer.from('mine')),
    record(TYPE.END_REQUEST, Buffer.alloc(8)),
  ]));
  assert.equal(Buffer.concat(out).toString(), 'mine');
  assert.ok(ended);
});
