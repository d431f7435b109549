'use strict';
// No time-of-check/time-of-use gap in file serving.
// A child process swaps, in a loop, a small file, a large (streamed) file and a parent directory
// below the web root for symbolic links to files outside it, while concurrent clients ask for
// them: small files, streamed files, ranges, precompressed siblings, index files and listings,
// GET and HEAD. Not one byte of the outside files may appear in any response, and no validator may
// name an outside file. The real server runs with 2 workers.
//   SVR_RACE_SECONDS (default 5): how long each race runs (the issue asks for >= 5 s).

const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const zlib = require('node:zlib');
const { spawn } = require('node:child_process');
const { startServer } = require('../support/helpers');

const SECONDS = Math.max(5, Number(process.env.SVR_RACE_SECONDS) || 5);
const CONCURRENCY = 16;
const MARK = 'OUTSIDE';

const REQUESTS = [
  { path: '/race/f.txt' },
  { path: '/race/big.txt' },
  { path: '/race/big.txt', headers: { Range: 'bytes=0-99' } },
  { path: '/race/big.txt', method: 'HEAD' },
  { path: '/race/d/passwd' },
  { path: '/race/d/passwd', method: 'HEAD' },
  { path: '/race/d/app.js', headers: { 'Accept-Encoding': 'gzip' } },
  { path: '/race/d/' },
  { path: '/race/d/', headers: { Accept: 'application/json' } },
  { path: '/race/d' },
  { path: '/race/page.html' }, // wrapped in .head/.foot (enableIncludingHeadAndFootInHTML)
  { path: '/race/d/index.html' },
];

function prepare(srv) {
  const outside = path.join(srv.dir, 'outside');
  fs.mkdirSync(outside);
  const secret = `${MARK}-SECRET `;
  fs.writeFileSync(path.join(outside, 'secret.txt'), secret.repeat(4));
  fs.writeFileSync(path.join(outside, 'big-secret.txt'), secret.repeat(4000));
  fs.writeFileSync(path.join(outside, 'passwd'), secret.repeat(3));
  fs.writeFileSync(path.join(outside, 'index.html'), secret.repeat(5));
  fs.writeFileSync(path.join(outside, 'app.js'), `// ${secret.repeat(200)}`);
  fs.writeFileSync(path.join(outside, 'app.js.gz'), zlib.gzipSync(`// ${secret.repeat(200)}`));
  fs.writeFileSync(path.join(outside, `${MARK}-NAME.txt`), 'x');
  const root = srv.root;
  fs.writeFileSync(path.join(root, 'inside.txt'), 'inside small file');
  fs.writeFileSync(path.join(root, 'inside-big.txt'), 'inside big file '.repeat(5000));
  fs.mkdirSync(path.join(root, 'race', 'd'), { recursive: true });
  fs.copyFileSync(path.join(root, 'inside.txt'), path.join(root, 'race', 'f.txt'));
  fs.writeFileSync(path.join(root, 'inside.html'), '<p>inside page</p>');
  fs.copyFileSync(path.join(root, 'inside.html'), path.join(root, 'race', 'page.html'));
  fs.copyFileSync(path.join(root, 'inside-big.txt'), path.join(root, 'race', 'big.txt'));
  fs.writeFileSync(path.join(root, 'race', 'd', 'passwd'), 'inside passwd');
  fs.writeFileSync(path.join(root, 'race', 'd', 'app.js'), `// ${'inside script '.repeat(200)}`);
  // The outside files' identities, as an ETag would show them.
  return {
    outside,
    inodes: fs.readdirSync(outside).map((name) => fs.statSync(path.join(outside, name)).ino.toString(16)),
  };
}

function startRacer(root, outside) {
  const child = spawn(process.execPath, [path.join(__dirname, '..', 'support', 'symlink-racer.js'), root, outside, String(SECONDS)],
    { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.setEncoding('utf8');
  const started = new Promise((resolve) => child.stdout.on('data', (chunk) => {
    out += chunk;
    if (out.includes('racing')) resolve();
  }));
  const done = new Promise((resolve) => child.once('exit', (code) => resolve({ code, swaps: Number((/swaps (\d+)/.exec(out) || [])[1]) })));
  return { started, done };
}

function fetchOnce(agent, port, spec) {
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port, path: spec.path, method: spec.method || 'GET', headers: spec.headers || {}, agent }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', () => resolve({ status: 'error', headers: {}, body: Buffer.alloc(0) }));
    });
    req.on('error', () => resolve({ status: 'error', headers: {}, body: Buffer.alloc(0) }));
    req.end();
  });
}

function leaks(response, inodes) {
  let body = response.body;
  if (response.headers['content-encoding'] === 'gzip' && body.length > 0) {
    try { body = zlib.gunzipSync(body); } catch { /* cut short: check the raw bytes */ }
  }
  const found = [];
  if (body.includes(MARK)) found.push('body');
  const etag = response.headers.etag || '';
  if (inodes.some((ino) => etag.startsWith(`"${ino}-`) || etag.startsWith(`W/"${ino}-`))) found.push(`etag ${etag}`);
  return found;
}

async function race(srv, inodes, done) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const stats = { requests: 0, statuses: {}, leaks: [] };
  let running = true;
  done.then(() => { running = false; });
  async function client(n) {
    for (let i = n; running; i++) {
      const spec = REQUESTS[i % REQUESTS.length];
      const response = await fetchOnce(agent, srv.port, spec);
      stats.requests++;
      stats.statuses[response.status] = (stats.statuses[response.status] || 0) + 1;
      const found = leaks(response, inodes);
      if (found.length) stats.leaks.push(`${spec.method || 'GET'} ${spec.path} ${response.status}: ${found.join(', ')}`);
    }
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, (_, n) => client(n)));
  agent.destroy();
  return stats;
}

// The two races run at the same time (each for SECONDS, against its own server): the machine is
// busy for SECONDS, not twice that.
describe('symlink races', { concurrency: true }, () => {
  for (const followSymlinks of [false, true]) {
    describe(`symlink race with followSymlinks: ${followSymlinks}`, () => {
      let srv;
      before(async () => {
        srv = await startServer({
          config: { workers: 2, followSymlinks, enableDirectoryListing: true, fileCacheMaxFileSize: 16384, enableIncludingHeadAndFootInHTML: true },
          files: { '.head': '<!-- head -->' },
        });
      });
      after(() => srv.stop());

      it(`serves nothing from outside the web root while files and directories are swapped for ${SECONDS} s`, async () => {
        const { outside, inodes } = prepare(srv);
        const racer = startRacer(srv.root, outside);
        await racer.started;
        const stats = await race(srv, inodes, racer.done);
        const { code, swaps } = await racer.done;
        assert.equal(code, 0, 'the racer ran to its end');
        process.stderr.write(`# followSymlinks ${followSymlinks}: ${stats.requests} requests, ${swaps} swaps, statuses ${JSON.stringify(stats.statuses)}, leaks ${stats.leaks.length}\n`);
        assert.ok(stats.requests > 100, `enough requests were made (${stats.requests})`);
        assert.ok((stats.statuses[200] || 0) > 0, 'inside files were served during the race');
        assert.deepEqual(stats.leaks.slice(0, 10), [], `${stats.leaks.length} responses carried outside content`);
      });
    });
  }
});

describe('files svr reads once from the web root (error pages, .head/.foot)', () => {
  let srv;
  before(async () => {
    srv = await startServer({ files: { 'serverSideScript.js': "if (req.url === '/script') res.responseEnd('BODY'); else elseCallback();\n" }, args: [], config: {} });
  });
  after(() => srv.stop());

  it('are not read through a symbolic link out of the root', async () => {
    const outside = path.join(srv.dir, 'outside');
    fs.mkdirSync(outside);
    fs.writeFileSync(path.join(outside, 'page'), `${MARK}-SECRET page`);
    fs.symlinkSync(path.join(outside, 'page'), path.join(srv.root, '404.html'));
    fs.symlinkSync(path.join(outside, 'page'), path.join(srv.root, '.head'));
    fs.writeFileSync(path.join(srv.root, '.foot'), 'FOOT');
    const { request } = require('../support/helpers');
    const since = srv.stderr().length;
    srv.signal('SIGHUP'); // re-read them
    await srv.waitForLog(/reload complete/, 'stderr', since); // from then on only the new worker accepts
    const missing = await request(`${srv.url}/missing`);
    assert.equal(missing.status, 404);
    assert.ok(!missing.text.includes(MARK), missing.text);
    const script = await request(`${srv.url}/script`);
    assert.ok(script.text.includes('BODY') && script.text.endsWith('FOOT'), script.text);
    assert.ok(!script.text.includes(MARK), script.text);
  });
});
