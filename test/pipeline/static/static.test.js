'use strict';
// Stage 5: static files — containment, dotfiles, the server's own files, MIME, index files and
// trailing slashes: the pipeline in-process on real sockets.

const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { request } = require('../../support/helpers');
const { startPipeline } = require('../../support/pipeline');

// Outside the web root, next to it: <dir>/secret/passwd, and a symlinked file and directory
// inside the root pointing at it.
function plantEscapes(srv) {
  const secret = path.join(srv.dir, 'secret');
  fs.mkdirSync(secret, { recursive: true });
  fs.writeFileSync(path.join(secret, 'passwd'), 'TOP SECRET');
  fs.symlinkSync(path.join(secret, 'passwd'), path.join(srv.root, 'escape.txt'));
  fs.symlinkSync(secret, path.join(srv.root, 'escapedir'));
  fs.symlinkSync('../secret', path.join(srv.root, 'sub', 'relescape'));
}

describe('containment with followSymlinks: false (default)', () => {
  let srv;
  before(async () => {
    srv = await startPipeline({ files: { 'a.txt': 'A', 'sub/b.txt': 'B' } });
    plantEscapes(srv);
    fs.symlinkSync('a.txt', path.join(srv.root, 'inside-link.txt'));
    fs.symlinkSync('sub', path.join(srv.root, 'inside-dir'));
  });
  after(() => srv.stop());

  it('does not follow a symlinked file out of the root', async () => {
    const res = await request(`${srv.url}/escape.txt`);
    assert.equal(res.status, 404);
    assert.ok(!res.text.includes('TOP SECRET'));
  });

  it('does not follow a symlinked parent directory out of the root', async () => {
    for (const p of ['/escapedir/passwd', '/sub/relescape/passwd']) {
      const res = await request(srv.url + p);
      assert.equal(res.status, 404, p);
      assert.ok(!res.text.includes('TOP SECRET'));
    }
  });

  it('does not follow symlinks even inside the root', async () => {
    assert.equal((await request(`${srv.url}/inside-link.txt`)).status, 404);
    assert.equal((await request(`${srv.url}/inside-dir/b.txt`)).status, 404);
  });

  it('serves regular files', async () => {
    assert.equal((await request(`${srv.url}/sub/b.txt`)).text, 'B');
  });
});

describe('containment with followSymlinks: true', () => {
  let srv;
  before(async () => {
    srv = await startPipeline({ config: { followSymlinks: true }, files: { 'a.txt': 'A', 'sub/b.txt': 'B', '.env': 'X' } });
    plantEscapes(srv);
    fs.symlinkSync('a.txt', path.join(srv.root, 'inside-link.txt'));
    fs.symlinkSync('sub', path.join(srv.root, 'inside-dir'));
    fs.symlinkSync('.env', path.join(srv.root, 'env.txt'));
  });
  after(() => srv.stop());

  it('follows symlinks that stay inside the root (file and parent)', async () => {
    assert.equal((await request(`${srv.url}/inside-link.txt`)).text, 'A');
    assert.equal((await request(`${srv.url}/inside-dir/b.txt`)).text, 'B');
  });

  it('still refuses a symlinked file that leads out of the root', async () => {
    const res = await request(`${srv.url}/escape.txt`);
    assert.equal(res.status, 404);
    assert.ok(!res.text.includes('TOP SECRET'));
  });

  it('still refuses a symlinked parent directory that leads out of the root', async () => {
    for (const p of ['/escapedir/passwd', '/sub/relescape/passwd']) {
      const res = await request(srv.url + p);
      assert.equal(res.status, 404, p);
      assert.ok(!res.text.includes('TOP SECRET'));
    }
  });

  it('answers 404 for a dangling symlink (a file that vanished) and keeps serving', async () => {
    fs.symlinkSync('gone.txt', path.join(srv.root, 'dangling.txt'));
    assert.equal((await request(`${srv.url}/dangling.txt`)).status, 404);
    assert.equal((await request(`${srv.url}/a.txt`)).text, 'A');
  });

  it('refuses a symlink whose target is a dotfile', async () => {
    assert.equal((await request(`${srv.url}/env.txt`)).status, 404);
  });
});

describe('dotfiles', () => {
  let denied;
  let allowed;
  const files = { '.env': 'SECRET=1', '.git/config': '[core]', 'sub/.hidden': 'h', '.well-known/security.txt': 'Contact: x', 'a.txt': 'A' };
  before(async () => {
    denied = await startPipeline({ files });
    allowed = await startPipeline({ config: { allowDotfiles: true }, files });
  });
  after(async () => { await denied.stop(); await allowed.stop(); });

  it('answers 404 for any path segment starting with a dot', async () => {
    for (const p of ['/.env', '/.git/config', '/.git/', '/sub/.hidden']) {
      const res = await request(denied.url + p);
      assert.equal(res.status, 404, p);
      assert.ok(!res.text.includes('SECRET=1'));
    }
  });

  it('serves /.well-known/', async () => {
    const res = await request(`${denied.url}/.well-known/security.txt`);
    assert.equal(res.status, 200);
    assert.equal(res.text, 'Contact: x');
  });

  it('serves dotfiles with allowDotfiles: true', async () => {
    assert.equal((await request(`${allowed.url}/.env`)).text, 'SECRET=1');
    assert.equal((await request(`${allowed.url}/sub/.hidden`)).text, 'h');
  });
});

describe("the server's own files", () => {
  let srv;
  before(async () => {
    // wwwroot is the directory holding the config file itself
    srv = await startPipeline({
      config: { wwwroot: '.', allowSensitiveFilesInWebRoot: true, modsDirectory: 'web/mods', followSymlinks: true },
      files: { 'index.html': 'site', 'serverSideScript.js': 'secret()', 'sub/serverSideScript.js': 'secret()', 'mods/m.js': 'module.exports = (req, res, log, config, next) => next(); // mod()' },
    });
    fs.symlinkSync(srv.configFile, path.join(srv.root, 'config-link.json'));
  });
  after(() => srv.stop());

  it('never serves the config file', async () => {
    assert.equal((await request(`${srv.url}/svr-config.json`)).status, 404);
  });

  it('never serves the config file through a symlink', async () => {
    assert.equal((await request(`${srv.url}/web/config-link.json`)).status, 404);
  });

  it('never serves serverSideScript.js, wherever it is', async () => {
    assert.equal((await request(`${srv.url}/web/serverSideScript.js`)).status, 404);
    assert.equal((await request(`${srv.url}/web/sub/serverSideScript.js`)).status, 404);
  });

  it('never serves the mods directory', async () => {
    assert.equal((await request(`${srv.url}/web/mods/m.js`)).status, 404);
    assert.equal((await request(`${srv.url}/web/mods/`)).status, 404);
  });

  it('still serves the site', async () => {
    assert.equal((await request(`${srv.url}/web/index.html`)).text, 'site');
  });
});

describe("svr's own code when wwwroot is the installation directory", () => {
  let srv;
  before(async () => {
    // The installation directory holds state/ (svr's own state): opting in is part of this choice.
    srv = await startPipeline({ config: { wwwroot: path.join(__dirname, '..', '..', '..'), allowSensitiveFilesInWebRoot: true } });
  });
  after(() => srv.stop());

  it('never serves svr.js, lib/, node_modules/, config/, package.json or package-lock.json', async () => {
    for (const p of ['/svr.js', '/lib/pipeline/index.js', '/node_modules/mime-types/package.json',
      '/config/svr-config.json', '/package.json', '/package-lock.json']) {
      assert.equal((await request(srv.url + p)).status, 404, p);
    }
  });

  it('still serves other files there', async () => {
    assert.equal((await request(`${srv.url}/web/index.html`)).status, 200);
  });
});

describe('MIME types, index files, trailing slashes', () => {
  let srv;
  let noRedirect;
  const files = {
    'a.txt': 'A', 'p.html': '<p>', 's.js': 'x', 'i.png': 'png', 'data.xyzzy': '?', 'noext': 'n', 'j.json': '{}',
    'docs/index.html': 'docs index', 'old/index.htm': 'old index', 'empty/.keep': '',
  };
  before(async () => {
    srv = await startPipeline({ files });
    noRedirect = await startPipeline({ config: { disableTrailingSlashRedirects: true }, files });
  });
  after(async () => { await srv.stop(); await noRedirect.stop(); });

  const types = {
    '/a.txt': 'text/plain; charset=utf-8',
    '/p.html': 'text/html; charset=utf-8',
    '/s.js': 'text/javascript; charset=utf-8',
    '/j.json': 'application/json; charset=utf-8',
    '/i.png': 'image/png',
    '/data.xyzzy': 'application/octet-stream',
    '/noext': 'application/octet-stream',
  };
  for (const [p, type] of Object.entries(types)) {
    it(`serves ${p} as ${type} with nosniff`, async () => {
      const res = await request(srv.url + p);
      assert.equal(res.status, 200);
      assert.equal(res.headers['content-type'], type);
      assert.equal(res.headers['x-content-type-options'], 'nosniff');
      assert.equal(res.headers['content-disposition'], undefined);
    });
  }

  it('serves index.html and index.htm for a directory', async () => {
    assert.equal((await request(`${srv.url}/docs/`)).text, 'docs index');
    assert.equal((await request(`${srv.url}/old/`)).text, 'old index');
  });

  it('redirects a directory without trailing slash (301, query kept)', async () => {
    const res = await request(`${srv.url}/docs?x=1&y=2`);
    assert.equal(res.status, 301);
    assert.equal(res.headers.location, '/docs/?x=1&y=2');
  });

  it('serves the directory without redirect when disableTrailingSlashRedirects is true', async () => {
    const res = await request(`${noRedirect.url}/docs?x=1`);
    assert.equal(res.status, 200);
    assert.equal(res.text, 'docs index');
  });

  it('answers 403 for a directory without index when listing is off', async () => {
    assert.equal((await request(`${srv.url}/empty/`)).status, 403);
  });

  it('answers 404 for a missing file and for a file with a trailing slash', async () => {
    assert.equal((await request(`${srv.url}/missing.txt`)).status, 404);
    assert.equal((await request(`${srv.url}/a.txt/`)).status, 404);
  });
});

describe('special files under the web root', () => {
  let srv;
  let socketServer;
  before(async () => {
    srv = await startPipeline({ files: { 'a.txt': 'A' } });
    // A FIFO nobody writes to: opening or reading it the ordinary way would wait for ever.
    execFileSync('mkfifo', [path.join(srv.root, 'pipe.txt')]);
    socketServer = net.createServer();
    await new Promise((resolve) => socketServer.listen(path.join(srv.root, 'sock.txt'), resolve));
  });
  after(async () => {
    if (socketServer) await new Promise((resolve) => socketServer.close(resolve));
    await srv.stop();
  });

  it('answers 404 for a FIFO and a socket, at once, and keeps serving', async () => {
    for (const p of ['/pipe.txt', '/sock.txt']) {
      assert.ok(!fs.statSync(path.join(srv.root, p)).isFile(), p);
      for (const method of ['GET', 'HEAD']) {
        const res = await request(srv.url + p, { method });
        assert.equal(res.status, 404, `${method} ${p}`);
      }
    }
    assert.equal((await request(`${srv.url}/a.txt`)).text, 'A');
  });
});

describe('a file that grows while it is sent', () => {
  const BIG = 32 * 1024 * 1024;
  let srv;
  before(async () => { srv = await startPipeline({ files: { 'grow.bin': Buffer.alloc(BIG, 1), 'small.txt': 'small' } }); });
  after(() => srv.stop());

  it('sends exactly the announced length and the keep-alive connection stays usable', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const length = await new Promise((resolve, reject) => {
      http.get(`${srv.url}/grow.bin`, { agent }, (res) => {
        res.pause(); // 32 MiB cannot fit in socket buffers: the server is still reading the file
        assert.equal(res.headers['content-length'], String(BIG));
        fs.appendFileSync(path.join(srv.root, 'grow.bin'), Buffer.alloc(1024 * 1024, 2));
        let n = 0;
        res.on('data', (chunk) => { n += chunk.length; });
        res.on('end', () => resolve(n));
        res.on('error', reject);
        res.resume();
      }).on('error', reject);
    });
    assert.equal(length, BIG);
    const next = await request(`${srv.url}/small.txt`, { agent });
    assert.equal(next.text, 'small');
    agent.destroy();
  });
});

describe('a web root that is not a usable directory', () => {
  it('stops the server at start with one message naming wwwroot (loader check)', async () => {
    await assert.rejects(startPipeline({ config: { wwwroot: 'no-such-dir' } }), /wwwroot: .*no-such-dir/);
  });

  it('createPipeline refuses it too (a worker reports that as a fatal start-up error)', () => {
    const { createPipeline } = require('../../../lib/pipeline');
    assert.throws(() => createPipeline({ wwwroot: path.join(__dirname, '..', '..', 'no-such-dir'), customHeaders: {} }, {}),
      (err) => err.code === 'EBADWWWROOT' && /wwwroot: .*no-such-dir is not a readable directory \(ENOENT\)/.test(err.message));
  });
});
