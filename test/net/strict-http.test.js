'use strict';
// Strict HTTP/1 at the edge, over raw sockets.
// Node's parser is lenient where RFC 9112 and nginx are not; svr answers these itself.

const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const { startServer } = require('../support/helpers');

// Sends raw bytes and collects everything until the server closes or `quietMs` pass without data
// after a complete response head. Resolves with { text, status, closed }.
function raw(port, bytes, { waitClose = false } = {}) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    let done = false;
    const finish = (closed) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(text);
      resolve({ text, status: m ? Number(m[1]) : null, closed });
    };
    const timer = setTimeout(() => finish(false), 5000);
    socket.setEncoding('latin1');
    socket.on('data', (chunk) => {
      text += chunk;
      const head = text.indexOf('\r\n\r\n');
      if (!waitClose && head !== -1) {
        const length = /\r\ncontent-length: *(\d+)/i.exec(text.slice(0, head));
        if (length && text.length >= head + 4 + Number(length[1])) finish(false);
      }
    });
    socket.on('end', () => finish(true));
    socket.on('close', () => finish(true));
    socket.on('error', (err) => (done ? undefined : reject(err)));
    socket.write(bytes);
  });
}

// A refusal: the status, `Connection: close` in its head, and the connection closed after it.
function assertRefused(res, status, label) {
  assert.equal(res.status, status, `${label}: ${res.text.split('\r\n')[0]}`);
  assert.match(res.text.slice(0, res.text.indexOf('\r\n\r\n') + 2), /\r\nConnection: close\r\n/i, `${label}: Connection: close`);
  assert.equal(res.closed, true, `${label}: the connection is closed`);
}

describe('strict HTTP/1 at the edge', () => {
  let srv;
  before(async () => {
    srv = await startServer({ files: { 'index.html': 'home', 'a.txt': 'A' } });
  });
  after(() => srv.stop());

  it('answers a well-formed request (control)', async () => {
    const res = await raw(srv.port, 'GET /a.txt HTTP/1.1\r\nHost: localhost\r\n\r\n');
    assert.equal(res.status, 200);
    assert.ok(res.text.endsWith('A'));
  });

  it('a duplicate Host header -> 400 and the connection closed', async () => {
    assertRefused(await raw(srv.port, 'GET /a.txt HTTP/1.1\r\nHost: localhost\r\nHost: evil.example\r\n\r\n', { waitClose: true }), 400, 'two Hosts');
  });

  it('no Host on HTTP/1.1 -> 400 and the connection closed; HTTP/1.0 needs none', async () => {
    assertRefused(await raw(srv.port, 'GET /a.txt HTTP/1.1\r\nAccept: */*\r\n\r\n', { waitClose: true }), 400, 'no Host');
    assert.equal((await raw(srv.port, 'GET /a.txt HTTP/1.0\r\n\r\n', { waitClose: true })).status, 200);
  });

  it('a Host that is not a host name or address with a port -> 400 and the connection closed', async () => {
    for (const host of ['evil.example/x?y#', 'evil/../x', 'x@evil.example', 'a b', '[::1', '\\evil', 'a..b', 'x:80:80']) {
      assertRefused(await raw(srv.port, `GET /a.txt HTTP/1.1\r\nHost: ${host}\r\n\r\n`, { waitClose: true }), 400, host);
    }
    for (const host of ['localhost', 'localhost:8080', 'www.example.com.', '127.0.0.1:1', '[::1]:8080', 'xn--bcher-kva.example', '']) {
      assert.equal((await raw(srv.port, `GET /a.txt HTTP/1.1\r\nHost: ${host}\r\n\r\n`)).status, 200, JSON.stringify(host));
    }
  });

  it('an absolute-form target whose authority is empty or not a host -> 400 and the connection closed', async () => {
    for (const target of ['http:///a.txt', 'http://x@localhost/a.txt', 'http://evil..example/a.txt', 'http://[::1/a.txt', 'http://x:80:80/a.txt']) {
      assertRefused(await raw(srv.port, `GET ${target} HTTP/1.1\r\nHost: localhost\r\n\r\n`, { waitClose: true }), 400, target);
    }
    for (const target of ['http://localhost/a.txt', 'http://LOCALHOST:8080/a.txt', 'https://[::1]:8443/a.txt', 'http://127.0.0.1/a.txt']) {
      assert.equal((await raw(srv.port, `GET ${target} HTTP/1.1\r\nHost: localhost\r\n\r\n`)).status, 200, target);
    }
    assert.equal((await raw(srv.port, 'GET http://localhost/a.txt HTTP/1.1\r\nHost: a b\r\n\r\n', { waitClose: true })).status, 400,
      'the Host header is still checked');
  });

  it('Transfer-Encoding on HTTP/1.0 -> 400 (faulty framing) and the connection closed', async () => {
    assertRefused(await raw(srv.port, 'POST /a.txt HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n', { waitClose: true }), 400, 'TE on 1.0');
  });

  it('HTTP/2.0 or another unsupported version on the HTTP/1 port -> 505 and the connection closed', async () => {
    for (const version of ['2.0', '3.0', '1.2']) {
      assertRefused(await raw(srv.port, `GET /a.txt HTTP/${version}\r\nHost: localhost\r\n\r\n`, { waitClose: true }), 505, version);
    }
  });

  it('a request line not ended by CRLF (a bare LF, a space after the version) -> 400, not 505', async () => {
    for (const line of ['GET /a.txt HTTP/1.1\nHost: localhost\n\n', 'GET /a.txt HTTP/1.0\nHost: localhost\n\n', 'GET /a.txt HTTP/1.1 \r\nHost: localhost\r\n\r\n']) {
      assertRefused(await raw(srv.port, line, { waitClose: true }), 400, JSON.stringify(line));
    }
  });

  it('a Transfer-Encoding other than chunked -> 501 and the connection closed', async () => {
    for (const te of ['gzip', 'xchunked', 'chunked, gzip', 'gzip, chunked']) {
      const body = '5\r\nhello\r\n0\r\n\r\n';
      const res = await raw(srv.port, `POST /a.txt HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: ${te}\r\n\r\n${body}` +
        'GET /a.txt HTTP/1.1\r\nHost: localhost\r\n\r\n', { waitClose: true });
      assertRefused(res, 501, te);
      assert.equal((res.text.match(/^HTTP\/1\.1 /gm) || []).length, 1, `${te}: nothing after it is answered`);
    }
  });

  it('the header size limit counts the bytes on the wire: 30 KB of headers do not pass 16 KB', async () => {
    const headers = 'A: b\r\n'.repeat(5000); // 30,000 bytes; only 10,000 of names and values
    assertRefused(await raw(srv.port, `GET /a.txt HTTP/1.1\r\nHost: localhost\r\n${headers}\r\n`, { waitClose: true }), 431, '30 KB of headers');
    // and a head just under the limit still passes
    const fits = 'X-Pad: ' + 'p'.repeat(15000) + '\r\n';
    assert.equal((await raw(srv.port, `GET /a.txt HTTP/1.1\r\nHost: localhost\r\n${fits}\r\n`)).status, 200);
  });
});
