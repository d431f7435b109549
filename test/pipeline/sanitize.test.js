'use strict';
// Stage 1: URL sanitizing, method policy and size limits: the pipeline in-process, real sockets.

const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const { request } = require('../support/helpers');
const { startPipeline } = require('../support/pipeline');

// A raw HTTP/1.1 exchange: lets a test send a request target byte for byte (http.request and
// curl would normalise it). Resolves with { status, headers, raw }.
function rawRequest(port, target, { method = 'GET', headers = {} } = {}) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks = [];
    socket.on('connect', () => {
      let head = `${method} ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n`;
      for (const [k, v] of Object.entries(headers)) head += `${k}: ${v}\r\n`;
      socket.write(head + '\r\n');
    });
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', reject);
    socket.on('end', () => {
      const raw = Buffer.concat(chunks).toString('latin1');
      const [head] = raw.split('\r\n\r\n');
      const lines = head.split('\r\n');
      const status = Number(lines[0].split(' ')[1]);
      const hdrs = {};
      for (const line of lines.slice(1)) {
        const i = line.indexOf(':');
        hdrs[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
      }
      resolve({ status, headers: hdrs, raw });
    });
  });
}

describe('URL sanitizing (default: 301 to the clean URL)', () => {
  let srv;
  let secretDir;
  before(async () => {
    srv = await startPipeline({
      files: { 'index.html': 'home', 'sub/a.txt': 'A', '%2e%2e/x.txt': 'literal name' },
    });
    // a file next to the web root that no request may reach
    secretDir = path.join(srv.dir, 'secret');
    fs.mkdirSync(secretDir);
    fs.writeFileSync(path.join(secretDir, 'passwd'), 'TOP SECRET');
  });
  after(() => srv.stop());

  const escapes = [
    '/../secret/passwd',
    '/%2e%2e/secret/passwd',
    '/%2E%2E/secret/passwd',
    '/.%2e/secret/passwd',
    '/sub/../../secret/passwd',
    '/..%2fsecret%2fpasswd',
    '/..%2Fsecret/passwd',
    '/..\\secret\\passwd',
    '/..%5csecret%5cpasswd',
    '/sub/%2e%2e/%2e%2e/secret/passwd',
  ];
  for (const target of escapes) {
    it(`refuses the traversal ${target} with 403 and never leaks the file`, async () => {
      const res = await rawRequest(srv.port, target);
      assert.equal(res.status, 403);
      assert.ok(!res.raw.includes('TOP SECRET'));
    });
  }

  it('serves double-encoded dots as a literal name, never as ..', async () => {
    const res = await rawRequest(srv.port, '/%252e%252e/secret/passwd');
    assert.equal(res.status, 404);
    assert.ok(!res.raw.includes('TOP SECRET'));
    const literal = await request(`${srv.url}/%252e%252e/x.txt`);
    assert.equal(literal.status, 200);
    assert.equal(literal.text, 'literal name');
  });

  it('answers a NUL byte (%00) with 400', async () => {
    assert.equal((await rawRequest(srv.port, '/sub/a.txt%00.html')).status, 400);
  });

  it('answers invalid percent-encoding with 400', async () => {
    assert.equal((await rawRequest(srv.port, '/sub/%zz')).status, 400);
    assert.equal((await rawRequest(srv.port, '/sub/a%2')).status, 400);
    assert.equal((await rawRequest(srv.port, '/sub/%')).status, 400);
  });

  it('answers overlong and invalid UTF-8 with 400', async () => {
    assert.equal((await rawRequest(srv.port, '/%c0%af')).status, 400);
    assert.equal((await rawRequest(srv.port, '/%c0%ae%c0%ae/secret/passwd')).status, 400);
    assert.equal((await rawRequest(srv.port, '/%e0%80%af')).status, 400);
    assert.equal((await rawRequest(srv.port, '/%ff')).status, 400);
  });

  it('redirects // and /./ to the clean URL with 301, query kept', async () => {
    let res = await rawRequest(srv.port, '//sub//a.txt?x=1//2');
    assert.equal(res.status, 301);
    assert.equal(res.headers.location, '/sub/a.txt?x=1//2');
    res = await rawRequest(srv.port, '/./sub/./a.txt');
    assert.equal(res.status, 301);
    assert.equal(res.headers.location, '/sub/a.txt');
  });

  it('redirects a .. that stays inside the root', async () => {
    const res = await rawRequest(srv.port, '/sub/../sub/a.txt');
    assert.equal(res.status, 301);
    assert.equal(res.headers.location, '/sub/a.txt');
  });

  it('treats %2f and backslashes as separators and redirects', async () => {
    let res = await rawRequest(srv.port, '/sub%2fa.txt');
    assert.equal(res.status, 301);
    assert.equal(res.headers.location, '/sub/a.txt');
    res = await rawRequest(srv.port, '/sub\\a.txt');
    assert.equal(res.status, 301);
    assert.equal(res.headers.location, '/sub/a.txt');
    res = await rawRequest(srv.port, '/sub%5Ca.txt');
    assert.equal(res.status, 301);
    assert.equal(res.headers.location, '/sub/a.txt');
  });

  it('keeps an already clean URL and its encoding as sent', async () => {
    const res = await rawRequest(srv.port, '/sub/%61.txt');
    assert.equal(res.status, 200);
    assert.match(res.raw, /\r\n\r\nA$/);
  });

  it('accepts an absolute-form request target', async () => {
    const res = await rawRequest(srv.port, `http://127.0.0.1:${srv.port}/sub/a.txt`);
    assert.equal(res.status, 200);
  });
});

describe('URL sanitizing with rewriteDirtyURLs: true (served internally)', () => {
  let srv;
  before(async () => {
    srv = await startPipeline({ config: { rewriteDirtyURLs: true }, files: { 'sub/a.txt': 'A' } });
  });
  after(() => srv.stop());

  it('serves //sub/./a.txt without a redirect', async () => {
    const res = await rawRequest(srv.port, '//sub/./a.txt');
    assert.equal(res.status, 200);
    assert.match(res.raw, /\r\n\r\nA$/);
  });

  it('still refuses traversal above the root', async () => {
    assert.equal((await rawRequest(srv.port, '/../etc/passwd')).status, 403);
  });
});

describe('methods and limits', () => {
  let srv;
  before(async () => {
    srv = await startPipeline({ config: { maxURLLength: 2000, maxHeaderSize: 8192 }, files: { 'a.txt': 'A' } });
  });
  after(() => srv.stop());

  it('answers GET and HEAD; HEAD has headers and no body', async () => {
    assert.equal((await request(`${srv.url}/a.txt`)).status, 200);
    const head = await request(`${srv.url}/a.txt`, { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.headers['content-length'], '1');
    assert.equal(head.body.length, 0);
  });

  for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
    it(`answers ${method} on a static file with 405 and Allow`, async () => {
      const res = await request(`${srv.url}/a.txt`, { method, body: method === 'DELETE' ? undefined : 'x' });
      assert.equal(res.status, 405);
      assert.equal(res.headers.allow, 'GET, HEAD, OPTIONS');
    });
  }

  it('answers OPTIONS on a path with 204 and Allow', async () => {
    const res = await request(`${srv.url}/a.txt`, { method: 'OPTIONS' });
    assert.equal(res.status, 204);
    assert.equal(res.headers.allow, 'GET, HEAD, OPTIONS');
  });

  it('answers OPTIONS * with 204 and Allow', async () => {
    const res = await rawRequest(srv.port, '*', { method: 'OPTIONS' });
    assert.equal(res.status, 204);
    assert.equal(res.headers.allow, 'GET, HEAD, OPTIONS');
  });

  it('answers GET * with 400', async () => {
    assert.equal((await rawRequest(srv.port, '*')).status, 400);
  });

  it('answers a URL longer than maxURLLength with 414', async () => {
    const res = await request(`${srv.url}/${'a'.repeat(2100)}`);
    assert.equal(res.status, 414);
    assert.equal((await request(`${srv.url}/${'a'.repeat(1900)}`)).status, 404);
  });

  it('answers headers larger than maxHeaderSize with 431', async () => {
    const res = await request(`${srv.url}/a.txt`, { headers: { 'X-Big': 'b'.repeat(10000) } });
    assert.equal(res.status, 431);
    assert.equal((await request(`${srv.url}/a.txt`, { headers: { 'X-Big': 'b'.repeat(4000) } })).status, 200);
  });
});
