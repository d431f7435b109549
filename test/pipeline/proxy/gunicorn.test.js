'use strict';
// Gunicorn's sync workers read a request, body included, one at a time, and its documentation
// says to put a buffering proxy in front of them: a client that uploads slowly holds a worker
// for as long as it takes. A proxy rule with `requestBuffering` is such a proxy: against a real
// Gunicorn with one sync worker (Debian's package, installed when missing), a request beside an
// unfinished upload is answered at once, and the upload's bytes all arrive once it is whole.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { startPipeline } = require('../../support/pipeline');
const { ensureDebianPackage, getFreePort, makeTempDir, request, waitUntil, LineWatcher } = require('../../support/helpers');
const { bytesInMemory } = require('../../../lib/pipeline/upstream/request-body');

const sha256 = (bytes) => crypto.createHash('sha256').update(bytes).digest('hex');

// A WSGI app answering "<length> <sha256>" of the body it read.
const APP = `import hashlib

def app(environ, start_response):
    length = int(environ.get('CONTENT_LENGTH') or 0)
    body = environ['wsgi.input'].read(length) if length else b''
    answer = f'{len(body)} {hashlib.sha256(body).hexdigest()}'.encode()
    start_response('200 OK', [('Content-Type', 'text/plain'), ('Content-Length', str(len(answer)))])
    return [answer]
`;

async function startGunicorn(t, command) {
  const dir = makeTempDir('svr-gunicorn-');
  fs.writeFileSync(path.join(dir, 'app.py'), APP);
  const port = await getFreePort();
  // Its own process group, so that the worker goes with the master whatever happens.
  const child = spawn(command, ['--workers', '1', '--worker-class', 'sync', '--bind', `127.0.0.1:${port}`, '--chdir', dir, 'app:app'], {
    stdio: ['ignore', 'ignore', 'pipe'], detached: true,
  });
  const log = new LineWatcher(child.stderr);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  t.after(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    process.kill(-child.pid, 'SIGTERM'); // graceful: the master stops its worker
    const timer = setTimeout(() => { try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ } }, 5000);
    await exited;
    clearTimeout(timer);
  });
  await log.waitFor(/Booting worker with pid/, 0, 30000);
  return `http://127.0.0.1:${port}`;
}

// The head and the first half of a body, then nothing until `finish()`.
function partialUpload(port, body) {
  return new Promise((resolve) => {
    let text = '';
    const half = body.length / 2;
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.write(`POST /app/upload HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`);
      socket.write(body.subarray(0, half), () => resolve({ finish: () => socket.write(body.subarray(half)), closed }));
    });
    socket.setEncoding('latin1');
    socket.on('data', (chunk) => { text += chunk; });
    socket.on('error', () => {});
    const closed = new Promise((done) => socket.on('close', () => done(text)));
  });
}

test('Gunicorn with one sync worker behind requestBuffering: a slow upload does not hold the worker', async (t) => {
  const gunicorn = ensureDebianPackage('gunicorn');
  if (gunicorn.skip) return t.skip(gunicorn.skip);
  const upstream = await startGunicorn(t, gunicorn.path);
  const s = await startPipeline({ config: { proxy: [{ path: '/app/', upstreams: [upstream], requestBuffering: true }] } });
  t.after(() => s.stop());
  const body = crypto.randomBytes(200000);
  const upload = await partialUpload(s.port, body);
  assert.ok(await waitUntil(() => bytesInMemory() === body.length / 2, 5000), 'svr holds the first half');
  const other = await request(`${s.url}/app/other`, { timeout: 10000 });
  assert.equal(other.status, 200);
  assert.equal(other.text, `0 ${sha256(Buffer.alloc(0))}`, 'the one worker answered another request meanwhile');
  upload.finish();
  assert.match(await upload.closed, new RegExp(`\\r\\n\\r\\n${body.length} ${sha256(body)}$`), 'every byte of the upload reached the app');
});
