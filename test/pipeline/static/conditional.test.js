'use strict';
// Validators, conditional requests and ranges on static files, the pipeline in-process on real sockets.

const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { request } = require('../../support/helpers');
const { startPipeline } = require('../../support/pipeline');

const BODY = '0123456789abcdefghij'; // 20 bytes
const MTIME = new Date('2024-05-01T12:00:00Z');
const BEFORE = 'Tue, 30 Apr 2024 12:00:00 GMT';
const AT = 'Wed, 01 May 2024 12:00:00 GMT';
const AFTER = 'Thu, 02 May 2024 12:00:00 GMT';

async function start(config) {
  const srv = await startPipeline({ config, files: { 'f.txt': BODY, 'empty.txt': '' } });
  fs.utimesSync(path.join(srv.root, 'f.txt'), MTIME, MTIME);
  return srv;
}

describe('validators (enableETag: true, default)', () => {
  let srv;
  let etag;
  const get = (headers, method) => request(`${srv.url}/f.txt`, { headers, method });
  before(async () => {
    srv = await start({});
    etag = (await get()).headers.etag;
  });
  after(() => srv.stop());

  it('sends a quoted strong ETag and Last-Modified', async () => {
    const res = await get();
    assert.match(etag, /^"[^"]+"$/);
    assert.equal(res.headers['last-modified'], AT);
    assert.equal(res.headers['accept-ranges'], 'bytes');
  });

  it('If-None-Match with the ETag -> 304 without body', async () => {
    const res = await get({ 'If-None-Match': etag });
    assert.equal(res.status, 304);
    assert.equal(res.body.length, 0);
    assert.equal(res.headers.etag, etag);
    assert.equal(res.headers['last-modified'], AT);
  });

  it('If-None-Match list containing the ETag -> 304', async () => {
    assert.equal((await get({ 'If-None-Match': `"nope", ${etag} , "other"` })).status, 304);
  });

  it('If-None-Match weak form of the ETag -> 304 (weak comparison)', async () => {
    assert.equal((await get({ 'If-None-Match': `W/${etag}` })).status, 304);
  });

  it('If-None-Match: * -> 304', async () => {
    assert.equal((await get({ 'If-None-Match': '*' })).status, 304);
  });

  it('If-None-Match with another tag -> 200', async () => {
    const res = await get({ 'If-None-Match': '"other"' });
    assert.equal(res.status, 200);
    assert.equal(res.text, BODY);
  });

  it('HEAD with a matching If-None-Match -> 304', async () => {
    assert.equal((await get({ 'If-None-Match': etag }, 'HEAD')).status, 304);
  });

  it('If-Modified-Since at or after Last-Modified -> 304', async () => {
    assert.equal((await get({ 'If-Modified-Since': AT })).status, 304);
    assert.equal((await get({ 'If-Modified-Since': AFTER })).status, 304);
  });

  it('If-Modified-Since before Last-Modified -> 200', async () => {
    assert.equal((await get({ 'If-Modified-Since': BEFORE })).status, 200);
  });

  it('If-Modified-Since that is not a date is ignored -> 200', async () => {
    assert.equal((await get({ 'If-Modified-Since': 'yesterday' })).status, 200);
  });

  it('If-None-Match takes precedence over If-Modified-Since', async () => {
    assert.equal((await get({ 'If-None-Match': '"other"', 'If-Modified-Since': AFTER })).status, 200);
  });

  it('If-Match with the ETag or * -> 200', async () => {
    assert.equal((await get({ 'If-Match': etag })).status, 200);
    assert.equal((await get({ 'If-Match': '*' })).status, 200);
  });

  it('If-Match with another tag -> 412', async () => {
    assert.equal((await get({ 'If-Match': '"other"' })).status, 412);
  });

  it('If-Match with the weak form -> 412 (strong comparison)', async () => {
    assert.equal((await get({ 'If-Match': `W/${etag}` })).status, 412);
  });

  it('If-Unmodified-Since before Last-Modified -> 412, at or after -> 200', async () => {
    assert.equal((await get({ 'If-Unmodified-Since': BEFORE })).status, 412);
    assert.equal((await get({ 'If-Unmodified-Since': AT })).status, 200);
  });

  it('the ETag changes when the file changes', async () => {
    fs.writeFileSync(path.join(srv.root, 'f.txt'), `${BODY}!`);
    fs.utimesSync(path.join(srv.root, 'f.txt'), MTIME, MTIME);
    const res = await get({ 'If-None-Match': etag });
    assert.equal(res.status, 200);
    assert.notEqual(res.headers.etag, etag);
    fs.writeFileSync(path.join(srv.root, 'f.txt'), BODY);
    fs.utimesSync(path.join(srv.root, 'f.txt'), MTIME, MTIME);
  });
});

describe('validators with enableETag: false', () => {
  let srv;
  before(async () => { srv = await start({ enableETag: false }); });
  after(() => srv.stop());

  it('sends no ETag but Last-Modified', async () => {
    const res = await request(`${srv.url}/f.txt`);
    assert.equal(res.headers.etag, undefined);
    assert.equal(res.headers['last-modified'], AT);
  });

  it('If-Modified-Since still gives 304', async () => {
    assert.equal((await request(`${srv.url}/f.txt`, { headers: { 'If-Modified-Since': AT } })).status, 304);
  });

  it('If-Match with a tag -> 412 (no current ETag), * -> 200', async () => {
    assert.equal((await request(`${srv.url}/f.txt`, { headers: { 'If-Match': '"x"' } })).status, 412);
    assert.equal((await request(`${srv.url}/f.txt`, { headers: { 'If-Match': '*' } })).status, 200);
  });
});

describe('ranges', () => {
  let srv;
  let etag;
  const get = (headers, method) => request(`${srv.url}/f.txt`, { headers, method });
  before(async () => {
    srv = await start({});
    etag = (await get()).headers.etag;
  });
  after(() => srv.stop());

  const cases = [
    ['bytes=0-4', '01234', 'bytes 0-4/20'],
    ['bytes=15-', 'fghij', 'bytes 15-19/20'],
    ['bytes=-3', 'hij', 'bytes 17-19/20'],
    ['bytes=-100', BODY, 'bytes 0-19/20'],
    ['bytes=18-999', 'ij', 'bytes 18-19/20'],
  ];
  for (const [range, body, contentRange] of cases) {
    it(`${range} -> 206 ${contentRange}`, async () => {
      const res = await get({ Range: range });
      assert.equal(res.status, 206);
      assert.equal(res.text, body);
      assert.equal(res.headers['content-range'], contentRange);
      assert.equal(res.headers['content-length'], String(body.length));
      assert.equal(res.headers['content-type'], 'text/plain; charset=utf-8');
    });
  }

  for (const range of ['bytes=20-', 'bytes=1000-2000', 'bytes=-0']) {
    it(`unsatisfiable ${range} -> 416 with Content-Range bytes */20, Content-Length: 0 and no body`, async () => {
      const res = await get({ Range: range });
      assert.equal(res.status, 416);
      assert.equal(res.headers['content-range'], 'bytes */20');
      assert.equal(res.headers['content-length'], '0');
      assert.equal(res.body.length, 0);
    });
  }

  for (const range of ['bytes=abc', 'bytes=5-2', 'items=0-3', 'bytes=', 'bytes=0-1,4-5']) {
    it(`malformed or multiple ${range} is ignored -> 200 full body`, async () => {
      const res = await get({ Range: range });
      assert.equal(res.status, 200);
      assert.equal(res.text, BODY);
      assert.equal(res.headers['content-range'], undefined);
    });
  }

  it('If-Range with the current ETag -> 206', async () => {
    assert.equal((await get({ Range: 'bytes=0-1', 'If-Range': etag })).status, 206);
  });

  it('If-Range with an old ETag -> 200 full body', async () => {
    const res = await get({ Range: 'bytes=0-1', 'If-Range': '"old"' });
    assert.equal(res.status, 200);
    assert.equal(res.text, BODY);
  });

  it('If-Range with the Last-Modified date -> 206, another date -> 200', async () => {
    assert.equal((await get({ Range: 'bytes=0-1', 'If-Range': AT })).status, 206);
    assert.equal((await get({ Range: 'bytes=0-1', 'If-Range': BEFORE })).status, 200);
  });

  it('HEAD ignores Range', async () => {
    const res = await get({ Range: 'bytes=0-1' }, 'HEAD');
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-length'], '20');
  });

  it('an empty file ignores Range -> 200', async () => {
    const res = await request(`${srv.url}/empty.txt`, { headers: { Range: 'bytes=0-' } });
    assert.equal(res.status, 200);
    assert.equal(res.body.length, 0);
  });
});

describe('the ETag follows the file, not just its size and mtime', () => {
  let srv;
  before(async () => { srv = await start({}); });
  after(() => srv.stop());

  it('a same-size file renamed over it with the same mtime (rsync -t) gets a new ETag', async () => {
    const file = path.join(srv.root, 'f.txt');
    const old = await request(`${srv.url}/f.txt`);
    const replacement = path.join(srv.root, 'f.txt.tmp');
    fs.writeFileSync(replacement, BODY.toUpperCase()); // same length
    fs.utimesSync(replacement, MTIME, MTIME);
    fs.renameSync(replacement, file);
    const res = await request(`${srv.url}/f.txt`, { headers: { 'If-None-Match': old.headers.etag } });
    assert.equal(res.status, 200);
    assert.equal(res.text, BODY.toUpperCase());
    assert.notEqual(res.headers.etag, old.headers.etag);
  });
});
