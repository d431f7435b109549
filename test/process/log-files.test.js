'use strict';
// accessLog / errorLog: two workers append to the same files; the files are renamed (as logrotate
// does) several times under load and reopened by `svr reopen-logs` or SIGUSR1. Every request has
// exactly one whole line across the files: none lost, torn or interleaved.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { startServer, runSvr, makeTempDir } = require('../support/helpers');

const REQUESTS = 3000;
const CONCURRENCY = 8;
const ROTATIONS = 6;
const LINE = /^127\.0\.0\.1 - - \[[^\]]+\] "GET \/page\.html\?n=(\d+) HTTP\/1\.1" 200 \d+ "-" "-" \d+\.\d{3}$/;

function get(url) {
  return new Promise((resolve, reject) => {
    http.get(url, { agent: false }, (res) => { res.resume(); res.on('end', () => resolve(res.statusCode)); }).on('error', reject);
  });
}

test('log files rotated under load (svr reopen-logs and SIGUSR1): every request has one whole line, none lost', async () => {
  const logs = makeTempDir();
  const socket = path.join(logs, 'control.sock');
  const accessLog = path.join(logs, 'access.log');
  const errorLog = path.join(logs, 'error.log');
  const server = await startServer({
    files: { 'page.html': 'hello' },
    config: { workers: 2, accessLog, errorLog },
    args: ['--control-socket', socket],
  });
  try {
    let next = 0;
    let done = 0;
    const client = async () => {
      while (next < REQUESTS) {
        const n = next++;
        assert.equal(await get(`${server.url}/page.html?n=${n}`), 200);
        done++;
      }
    };
    const load = Promise.all(Array.from({ length: CONCURRENCY }, client));
    for (let k = 1; k <= ROTATIONS; k++) {
      // Rotate once every REQUESTS / (ROTATIONS + 1) requests.
      while (done < (REQUESTS * k) / (ROTATIONS + 1)) await new Promise((r) => setTimeout(r, 5));
      fs.renameSync(accessLog, `${accessLog}.${k}`);
      fs.renameSync(errorLog, `${errorLog}.${k}`);
      if (k % 2) {
        const r = await runSvr(['reopen-logs', '--control-socket', socket]);
        assert.equal(r.code, 0, r.stderr);
        assert.match(r.stdout, /^svr reopen-logs: log files reopened by the primary; 2 worker\(s\) asked to reopen theirs$/);
      } else {
        server.signal('SIGUSR1');
      }
    }
    await load;
  } finally {
    await server.stop(); // workers flush what they hold before exiting
  }
  const files = fs.readdirSync(logs).filter((name) => name.startsWith('access.log'));
  assert.equal(files.length, ROTATIONS + 1, files.join(' '));
  const seen = new Map();
  for (const name of files) {
    const text = fs.readFileSync(path.join(logs, name), 'utf8');
    assert.ok(text === '' || text.endsWith('\n'), `${name} ends with a whole line`);
    for (const line of text.split('\n').slice(0, -1)) {
      const m = LINE.exec(line);
      assert.ok(m, `a whole, untorn access-log line in ${name}: ${JSON.stringify(line)}`);
      seen.set(m[1], (seen.get(m[1]) || 0) + 1);
    }
  }
  assert.equal(seen.size, REQUESTS, 'every request has its line');
  assert.ok([...seen.values()].every((count) => count === 1), 'no line twice');
  const rotatedWithLines = files.filter((name) => fs.statSync(path.join(logs, name)).size > 0).length;
  assert.ok(rotatedWithLines >= 4, `lines spread over the rotated files (${rotatedWithLines} of ${files.length} have lines)`);
  const errors = fs.readdirSync(logs).filter((name) => name.startsWith('error.log'))
    .map((name) => fs.readFileSync(path.join(logs, name), 'utf8')).join('');
  assert.match(errors, /info primary: svr \S+ listening on /, 'the error log has the diagnostics');
  assert.match(errors, /log files reopened/);
  fs.rmSync(logs, { recursive: true, force: true });
});
