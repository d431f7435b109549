'use strict';
// The access log: its line formats in-process (the harness writes the lines the worker's access log
// would, support/pipeline.js); what the process writes to its stdout (nothing when logging is off,
// every line flushed on a graceful stop) against real svr processes.
const test = require('node:test');
const assert = require('node:assert/strict');
const { startServer, request } = require('../support/helpers');
const { startPipeline } = require('../support/pipeline');

const COMBINED = /^127\.0\.0\.1 - - \[\d{2}\/[A-Z][a-z]{2}\/\d{4}:\d{2}:\d{2}:\d{2} \+0000\] "GET \/hello\.txt\?q=1 HTTP\/1\.1" 200 5 "http:\/\/ref\.example\/" "test-agent\/1\.0" \d+\.\d{3}$/;

test('the access log is one combined-format line per request, with the response time', async () => {
  const server = await startPipeline({ files: { 'hello.txt': 'hello' } });
  try {
    await request(`${server.url}/hello.txt?q=1`, { headers: { 'User-Agent': 'test-agent/1.0', Referer: 'http://ref.example/' } });
    const line = await server.waitForLog(/hello\.txt/, 'stdout');
    assert.match(line, COMBINED);
  } finally {
    await server.stop();
  }
});

test('quotes and control characters in logged fields are escaped', async () => {
  const server = await startPipeline({ files: { 'hello.txt': 'hello' } });
  try {
    await request(`${server.url}/hello.txt`, { headers: { 'User-Agent': 'evil" agent\\' } });
    const line = await server.waitForLog(/hello\.txt/, 'stdout');
    assert.ok(line.endsWith(`"evil\\" agent\\\\" ${line.split(' ').pop()}`), line);
  } finally {
    await server.stop();
  }
});

test('logFormat "json" writes one JSON object per request', async () => {
  const server = await startPipeline({ config: { logFormat: 'json' }, files: { 'hello.txt': 'hello' } });
  try {
    await request(`${server.url}/hello.txt`, { headers: { 'User-Agent': 'json-agent' } });
    const entry = JSON.parse(await server.waitForLog(/hello\.txt/, 'stdout'));
    assert.equal(entry.method, 'GET');
    assert.equal(entry.url, '/hello.txt');
    assert.equal(entry.status, 200);
    assert.equal(entry.bytes, 5);
    assert.equal(entry.remote, '127.0.0.1');
    assert.equal(entry.userAgent, 'json-agent');
    assert.equal(typeof entry.seconds, 'number');
    assert.ok(!Number.isNaN(Date.parse(entry.time)));
  } finally {
    await server.stop();
  }
});

test('logFormat "json": one type per field (bytes a number or null, referer and userAgent null when missing)', async () => {
  const script = 'if (href === "/chunked") { res.writeHead(200, { "Content-Type": "text/plain" }); res.write("a"); res.end("b"); return; }';
  const server = await startPipeline({ config: { logFormat: 'json' }, files: { 'hello.txt': 'hello', 'serverSideScript.js': script } });
  try {
    await request(`${server.url}/chunked`, { headers: { 'User-Agent': '' } });
    const chunked = JSON.parse(await server.waitForLog(/"url":"\/chunked"/, 'stdout'));
    assert.equal(chunked.bytes, null, 'a body sent without Content-Length and not counted: null, not "-"');
    assert.equal(chunked.referer, null);
    assert.equal(chunked.userAgent, null);
    assert.equal(chunked.user, '-');
    await request(`${server.url}/hello.txt`, { headers: { Referer: 'http://ref.example/', 'User-Agent': 'ua' } });
    const plain = JSON.parse(await server.waitForLog(/"url":"\/hello\.txt"/, 'stdout'));
    assert.equal(plain.bytes, 5);
    assert.equal(plain.referer, 'http://ref.example/');
    assert.equal(plain.userAgent, 'ua');
    // The combined format keeps "-" for each of them.
  } finally {
    await server.stop();
  }
  const combined = await startPipeline({ files: { 'serverSideScript.js': script } });
  try {
    await request(`${combined.url}/chunked`, { headers: { 'User-Agent': '' } });
    assert.match(await combined.waitForLog(/\/chunked/, 'stdout'), /"GET \/chunked HTTP\/1\.1" 200 - "-" "-" \d+\.\d{3}$/);
  } finally {
    await combined.stop();
  }
});

test('enableLogging false writes no access log', async () => {
  const server = await startServer({ config: { enableLogging: false }, files: { 'hello.txt': 'hello' } });
  try {
    const res = await request(`${server.url}/hello.txt`);
    assert.equal(res.status, 200);
    await server.stop();
    assert.deepEqual(server.stdout().filter((line) => line.trim() !== ''), []);
  } finally {
    await server.stop();
  }
});

test('a graceful stop flushes every access-log line', async () => {
  const server = await startServer({ files: { 'hello.txt': 'hello' } });
  await Promise.all(Array.from({ length: 50 }, () => request(`${server.url}/hello.txt`)));
  await server.stop();
  assert.equal(server.stdout().filter((line) => line.includes('/hello.txt')).length, 50);
});
