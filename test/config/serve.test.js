'use strict';
// `svr serve [DIR]`: a folder served with no config file, from the command line and through npx.
const test = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { LineWatcher, getFreePort, makeTempDir, writeFiles, request, runSvr, spawnSvr, SVR } = require('../support/helpers');

const REPO = path.dirname(SVR);
const SCRIPT = 'if (href === "/hello") { res.writeHead(200, { "Content-Type": "text/plain" }); res.end("from the script"); return; }\n';

function site() {
  const dir = makeTempDir();
  writeFiles(dir, { 'index.html': '<p>the folder</p>', 'sub/a.txt': 'a', 'serverSideScript.js': SCRIPT, '.env': 'SECRET=1' });
  return dir;
}

// Starts `svr serve ...args` and waits for the banner: { port, child, stop }.
async function serve(args, spawnFn = (list) => spawnSvr(list)) {
  const child = spawnFn(['serve', ...args, '--workers', '1']);
  const failed = child.exited.then(({ code }) => { throw new Error(`svr serve exited with ${code}:\n${child.err.lines.join('\n')}`); });
  failed.catch(() => {});
  const banner = await Promise.race([child.err.waitFor(/listening on /), failed]);
  const port = Number(/:(\d+) \(/.exec(banner)[1]);
  return {
    port, child, banner,
    stop: async () => {
      child.kill();
      return child.exited;
    },
  };
}

function svrChild(list) {
  const child = spawnSvr(list);
  return { ...child, kill: () => child.proc.kill('SIGTERM') };
}

test('svr serve DIR --port N: the folder as the web root, the same banner and access log, listing and scripts off', async () => {
  const dir = site();
  const port = await getFreePort();
  const server = await serve([dir, '--port', String(port)], svrChild);
  try {
    assert.equal(server.port, port);
    assert.match(server.banner, /info primary: svr \S+ listening on http:\/\/\[::\]:\d+ \(1 worker, primary pid \d+\)$/);
    assert.ok(server.child.err.lines.some((line) => line.includes(`svr serve: ${dir}, directory listing off`)));
    const index = await request(`http://127.0.0.1:${port}/`, { headers: { 'User-Agent': 'serve-test' } });
    assert.equal(index.status, 200);
    assert.equal(index.text, '<p>the folder</p>');
    assert.equal(index.headers.server, 'svr'); // exposeServerVersion: the schema's default (false)
    await server.child.out.waitFor(/"GET \/ HTTP\/1\.1" 200 17 "-" "serve-test" \d+\.\d{3}$/);
    assert.equal((await request(`http://127.0.0.1:${port}/sub/`)).status, 403, 'no listing without --listing');
    assert.equal((await request(`http://127.0.0.1:${port}/hello`)).status, 404, 'serverSideScript.js does not run without --scripts');
    assert.equal((await request(`http://127.0.0.1:${port}/serverSideScript.js`)).status, 404);
    assert.equal((await request(`http://127.0.0.1:${port}/.env`)).status, 404, 'dotfiles: the schema default');
  } finally {
    assert.equal((await server.stop()).code, 0);
  }
});

test('svr serve --listing lists directories; --scripts runs serverSideScript.js', async () => {
  const dir = site();
  const server = await serve([dir, '--port', String(await getFreePort()), '--listing', '--scripts'], svrChild);
  try {
    const listing = await request(`http://127.0.0.1:${server.port}/sub/`);
    assert.equal(listing.status, 200);
    assert.match(listing.text, /a\.txt/);
    const hello = await request(`http://127.0.0.1:${server.port}/hello`);
    assert.equal(hello.status, 200);
    assert.equal(hello.text, 'from the script');
    assert.equal((await request(`http://127.0.0.1:${server.port}/serverSideScript.js`)).status, 404, 'the script is never served');
  } finally {
    await server.stop();
  }
});

test('svr serve with no --port takes 8080 when free, else a free port', async () => {
  // Hold 8080 (unless something else already does): svr serve must then choose another port.
  const holder = net.createServer();
  await new Promise((resolve) => {
    holder.once('error', resolve);
    holder.listen({ port: 8080, ipv6Only: false }, resolve);
  });
  const dir = site();
  let server;
  try {
    server = await serve([dir], svrChild);
    assert.notEqual(server.port, 8080);
    assert.equal((await request(`http://127.0.0.1:${server.port}/`)).text, '<p>the folder</p>');
  } finally {
    if (server) await server.stop();
    if (holder.listening) await new Promise((resolve) => holder.close(resolve));
  }
});

test('npx svr serve DIR works in a checkout (the package bin)', async () => {
  const dir = site();
  const spawnNpx = (list) => {
    // Its own process group, so that npx and the svr it starts stop together.
    const proc = spawn('npx', ['--no-install', 'svr', ...list], { cwd: REPO, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    const out = new LineWatcher(proc.stdout);
    const err = new LineWatcher(proc.stderr);
    const exited = new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
    return { proc, out, err, exited, kill: () => { try { process.kill(-proc.pid, 'SIGTERM'); } catch { /* gone */ } } };
  };
  const server = await serve([dir, '--port', String(await getFreePort())], spawnNpx);
  try {
    assert.equal((await request(`http://127.0.0.1:${server.port}/`)).text, '<p>the folder</p>');
  } finally {
    await server.stop();
  }
});

test('svr serve: a missing folder is named; options that need a config file are refused', async () => {
  const missing = await runSvr(['serve', '/nonexistent/site', '--port', String(await getFreePort())]);
  assert.equal(missing.code, 78);
  assert.match(missing.stderr, /svr serve: wwwroot: expected an existing directory, found "\/nonexistent\/site": no such file or directory/);
  const withConfig = await runSvr(['serve', '.', '--config', 'x.json']);
  assert.equal(withConfig.code, 1);
  assert.match(withConfig.stderr, /svr serve takes no --config/);
  const listingAlone = await runSvr(['--listing']);
  assert.equal(listingAlone.code, 1);
  assert.match(listingAlone.stderr, /--listing is an option of svr serve .*"enableDirectoryListing": true/);
});

test('--help shows svr serve first', async () => {
  const { code, stdout } = await runSvr(['--help']);
  assert.equal(code, 0);
  assert.match(stdout.split('\n')[0], /^Usage: svr serve \[DIR\] \[--port N\] \[--listing\] \[--scripts\]/);
});

test('a mistyped option or command gets "did you mean", not the whole help', async () => {
  const option = await runSvr(['--chek']);
  assert.equal(option.code, 1);
  assert.equal(option.stderr, 'svr: unknown option --chek; did you mean --check?\nRun "svr --help" for the commands and options.');
  const command = await runSvr(['serv', 'web']);
  assert.equal(command.code, 1);
  assert.match(command.stderr, /unexpected argument "serv"; did you mean "svr serve"\?/);
  assert.doesNotMatch(command.stderr, /Options:/);
});
