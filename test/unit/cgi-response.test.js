'use strict';
// A CGI response's header block (RFC 3875 section 6), as both gateways read it.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { CgiResponse, parseHeaderBlock } = require('../../lib/pipeline/gateway/cgi-response');

// A stand-in for http.ServerResponse that records what it was told.
function fakeResponse() {
  return {
    status: null, message: null, headers: null, body: [], ended: false, destroyed: false,
    writeHead(status, message, headers) { this.status = status; this.message = message; this.headers = headers; },
    write(chunk) { this.body.push(Buffer.from(chunk)); return true; },
    end() { this.ended = true; },
    destroy() { this.destroyed = true; },
  };
}

function run(chunks, method = 'GET') {
  const res = fakeResponse();
  const events = [];
  const out = new CgiResponse({ method, svr: {} }, res, {
    fail: (status, reason) => events.push(['fail', status, reason]),
    localRedirect: (location) => events.push(['redirect', location]),
    maxHeaderBytes: 1024,
  });
  for (const chunk of chunks) out.push(Buffer.from(chunk));
  out.end();
  return { res, events, body: Buffer.concat(res.body).toString() };
}

test('a document: 200 without Status, the body after the blank line, split anywhere', () => {
  const text = 'Content-Type: text/html\r\nX-One: 1\r\n\r\n<p>hi</p>';
  for (let cut = 1; cut < text.length; cut += 7) {
    const { res, body, events } = run([text.slice(0, cut), text.slice(cut)]);
    assert.deepEqual(events, []);
    assert.equal(res.status, 200);
    assert.deepEqual(res.headers, { 'content-type': 'text/html', 'x-one': '1' });
    assert.equal(body, '<p>hi</p>');
    assert.ok(res.ended);
  }
});

test('Status with its reason; LF-only lines; repeated Set-Cookie kept apart; hop-by-hop and Server dropped', () => {
  const { res } = run(['Status: 404 Not Here\nSet-Cookie: a=1\nSet-Cookie: b=2\nConnection: close\nTransfer-Encoding: chunked\nServer: php\nX-A: 1\nX-A: 2\n\nbody']);
  assert.equal(res.status, 404);
  assert.equal(res.message, 'Not Here');
  assert.deepEqual(res.headers, { 'set-cookie': ['a=1', 'b=2'], 'x-a': '1, 2' });
});

test('Location: an absolute URL is a 302 unless Status says otherwise; /path alone is a local redirect', () => {
  assert.equal(run(['Location: https://example.com/\r\n\r\n']).res.status, 302);
  assert.equal(run(['Status: 301\r\nLocation: /moved\r\n\r\n']).res.status, 301);
  assert.deepEqual(run(['Location: /other?x=1\r\n\r\n']).events, [['redirect', '/other?x=1']]);
  assert.equal(run(['Location: //evil.example/\r\n\r\n']).res.status, 302, 'a network-path reference is no local path');
  assert.equal(run(['Location: /a\r\n\r\n', 'body']).events[0][1], 502, 'a local redirect has no body');
});

test('a missing, malformed or oversized header block is a 502', () => {
  for (const [chunks, reason] of [
    [[''], /no output/],
    [['Content-Type: text/plain\r\n'], /inside the header block/],
    [['no colon here\r\n\r\n'], /malformed header line/],
    [['Status: 99 Low\r\n\r\n'], /invalid Status/],
    [['X: ' + 'y'.repeat(2000)], /larger than 1024 bytes/],
    [['Content-Length: abc\r\n\r\n'], /invalid Content-Length/],
  ]) {
    const { events, res } = run(chunks);
    assert.equal(events[0][0], 'fail', chunks[0].slice(0, 30));
    assert.equal(events[0][1], 502);
    assert.match(events[0][2], reason);
    assert.equal(res.status, null, 'nothing went to the client');
  }
});

test('a body longer or shorter than its Content-Length cuts the connection; HEAD has no body to count', () => {
  assert.ok(run(['Content-Length: 3\r\n\r\nabcdef']).res.destroyed);
  assert.ok(run(['Content-Length: 10\r\n\r\nabc']).res.destroyed);
  const exact = run(['Content-Length: 3\r\n\r\nabc']);
  assert.ok(!exact.res.destroyed && exact.res.ended);
  const head = run(['Content-Length: 3\r\n\r\n'], 'HEAD');
  assert.ok(!head.res.destroyed && head.res.ended);
});

test('parseHeaderBlock counts the fields (a local redirect has exactly one)', () => {
  assert.equal(parseHeaderBlock('Location: /a').count, 1);
  assert.equal(parseHeaderBlock('Location: /a\r\nContent-Type: text/plain').count, 2);
});

test('the default header block limit is 64 KiB', () => {
  const sized = (n) => {
    const res = fakeResponse();
    const events = [];
    const out = new CgiResponse({ method: 'GET', svr: {} }, res, { fail: (status) => events.push(status), localRedirect: () => {} });
    out.push(Buffer.from(`X-Big: ${'a'.repeat(n)}\r\n`));
    out.push(Buffer.from('\r\nbody'));
    out.end();
    return { status: res.status, events };
  };
  assert.equal(sized(65000).status, 200);
  assert.deepEqual(sized(66000).events, [502]);
});

// The response cache's hooks: what it sees of a script's answer, and when.
function hooked(onHead, onGone = () => {}) {
  const res = Object.assign(new (require('node:events').EventEmitter)(), fakeResponse());
  const failures = [];
  const out = new CgiResponse({ method: 'GET', svr: {} }, res, { fail: (status) => failures.push(status), localRedirect() {}, onHead, onGone });
  return { res, out, failures };
}

function recordingTap() {
  const tap = { chunks: [], ended: false, aborted: false };
  return Object.assign(tap, { data(chunk) { tap.chunks.push(String(chunk)); }, end() { tap.ended = true; }, abort() { tap.aborted = true; } });
}

test('cache hooks: the head before the client gets it, the body as it is sent, the end or an abort', () => {
  const tap = recordingTap();
  let head = null;
  const { res, out } = hooked((upRes, headers) => { head = [upRes.statusCode, headers]; return tap; });
  out.push(Buffer.from('Status: 404\r\nCache-Control: max-age=60\r\n\r\nno'));
  assert.deepEqual(head, [404, { 'cache-control': 'max-age=60' }]);
  out.push(Buffer.from('pe'));
  out.end();
  res.emit('close');
  assert.deepEqual([tap.chunks, tap.ended, tap.aborted, Buffer.concat(res.body).toString()], [['no', 'pe'], true, false, 'nope']);

  const cut = recordingTap();
  const gone = hooked(() => cut);
  gone.out.push(Buffer.from('Cache-Control: max-age=60\r\n\r\nhalf'));
  gone.res.emit('close'); // the client went away before the end
  assert.deepEqual([cut.ended, cut.aborted], [false, true]);

  const long = recordingTap();
  const over = hooked(() => long);
  over.out.push(Buffer.from('Content-Length: 2\r\n\r\nthree'));
  assert.deepEqual([long.aborted, over.res.destroyed], [true, true], 'longer than its Content-Length: not stored');
});

test('cache hooks: "handled" leaves the client to the cache; a client gone before any head is reported', () => {
  const { res, out } = hooked(() => 'handled');
  out.push(Buffer.from('Status: 304\r\n\r\n'));
  assert.deepEqual([out.done, res.status, res.ended], [true, null, false], 'nothing written by the gateway');

  let goneCalls = 0;
  const early = hooked(() => recordingTap(), () => { goneCalls++; });
  early.res.emit('close');
  assert.equal(goneCalls, 1);
});
