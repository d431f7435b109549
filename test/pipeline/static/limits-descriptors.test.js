'use strict';
// Running out of descriptors once broke large files and Range
// requests in that worker for good (a module loaded lazily on the request path failed under
// EMFILE and Node cached the failure). Now nothing is loaded on a request path, a worker sheds
// connections beyond maxConnections (sized from the descriptor limit) before its table is full,
// so connections it did accept are still served, and every kind of request works once the
// flood is gone.

const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const net = require('node:net');
const { startServer, request } = require('../../support/helpers');

const FD_LIMIT = 256;
const FLOOD = 400; // more connections than the worker has descriptors
const BIG = Buffer.alloc(2 * 1024 * 1024, 'b'); // above fileCacheMaxFileSize: streamed from an open file

const FILES = {
  'small.txt': 'small\n',
  'big.bin': BIG,
  'dir/one.txt': '1',
  'dir/two.txt': '2',
  'serverSideScript.js': "if (href === '/script') { responseEnd('from the script'); return; }\n",
};

// Every kind of request the report saw break: small file, large file, Range, listing, script.
async function everyKind(url, agent) {
  const small = await request(`${url}/small.txt`, { agent });
  const big = await request(`${url}/big.bin`, { agent });
  const range = await request(`${url}/big.bin`, { agent, headers: { range: 'bytes=0-9' } });
  const listing = await request(`${url}/dir/`, { agent });
  const script = await request(`${url}/script`, { agent });
  return {
    small: small.status, big: big.status, bigLength: big.body.length, range: range.status, rangeText: range.text,
    listing: listing.status, listed: /two\.txt/.test(listing.text), script: script.text,
  };
}

const EXPECTED = { small: 200, big: 200, bigLength: BIG.length, range: 206, rangeText: 'bbbbbbbbbb', listing: 200, listed: true, script: 'from the script' };

function connectIdle(port) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.on('error', () => {});
    socket.once('connect', () => resolve(socket));
    socket.once('close', () => resolve(socket));
  });
}

test('a flood of idle connections cannot exhaust a worker\'s descriptors; everything works afterwards', async () => {
  const server = await startServer({
    config: { workers: 1, enableDirectoryListing: true, useWebRootServerSideScript: true, headersTimeout: 60000, requestTimeout: 120000, keepAliveTimeout: 60000 },
    files: FILES,
    spawnOptions: { fdLimit: FD_LIMIT },
  });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const flood = [];
  try {
    assert.deepEqual(await everyKind(server.url, agent), EXPECTED); // fresh worker, one kept-alive connection
    for (let i = 0; i < FLOOD; i++) flood.push(await connectIdle(server.port));
    await new Promise((resolve) => setImmediate(resolve));
    const open = flood.filter((s) => !s.destroyed).length;
    assert.ok(open < FLOOD, `the worker shed some of ${FLOOD} connections (${open} open)`);
    // The connection accepted before the flood is still served, large files and Range included.
    assert.deepEqual(await everyKind(server.url, agent), EXPECTED);
    for (const socket of flood) socket.destroy();
    flood.length = 0;
    agent.destroy();
    // New connections: every kind works again, once the worker has seen the flood's sockets close
    // (until then a new connection may still be over the limit and be shed).
    for (let attempt = 0; attempt < 50; attempt++) {
      const res = await request(`${server.url}/small.txt`).catch(() => null);
      if (res && res.status === 200) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.deepEqual(await everyKind(server.url), EXPECTED);
    assert.deepEqual(await everyKind(server.url), EXPECTED);
    assert.ok(server.stderr().filter((l) => /EMFILE/.test(l)).length <= 5, 'accept errors are not logged once per attempt');
  } finally {
    for (const socket of flood) socket.destroy();
    agent.destroy();
    await server.stop();
  }
});
