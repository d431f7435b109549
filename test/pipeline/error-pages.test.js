'use strict';
// Stage 3 and 6: Server header, customHeaders, error pages and their toggles: the pipeline
// in-process on real sockets.

const { describe, it, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { request } = require('../support/helpers');
const { startPipeline } = require('../support/pipeline');
const { version } = require('../../package.json');

const VERSIONED = `svr/${version} (Linux; Node.js/${process.version})`;

describe('exposeServerVersion: false (default)', () => {
  let srv;
  before(async () => { srv = await startPipeline({ files: { 'a.txt': 'A' } }); });
  after(() => srv.stop());

  it('sends Server: svr on files and errors', async () => {
    assert.equal((await request(`${srv.url}/a.txt`)).headers.server, 'svr');
    const res = await request(`${srv.url}/missing`);
    assert.equal(res.headers.server, 'svr');
    assert.match(res.text, /<footer>svr<\/footer>/);
    assert.ok(!res.text.includes(process.version));
  });

  it('sends Server even on a 400 from the sanitizer', async () => {
    assert.equal((await request(`${srv.url}/%zz`)).headers.server, 'svr');
  });

  it('renders a tidy built-in 404 page', async () => {
    const res = await request(`${srv.url}/missing`);
    assert.equal(res.status, 404);
    assert.equal(res.headers['content-type'], 'text/html; charset=utf-8');
    assert.match(res.text, /^<!DOCTYPE html>/);
    assert.match(res.text, /<title>404 Not Found<\/title>/);
  });

  it('a HEAD error has headers and no body', async () => {
    const res = await request(`${srv.url}/missing`, { method: 'HEAD' });
    assert.equal(res.status, 404);
    assert.ok(Number(res.headers['content-length']) > 0);
    assert.equal(res.body.length, 0);
  });

  it('answers JSON errors to clients that ask for JSON', async () => {
    const res = await request(`${srv.url}/missing`, { headers: { Accept: 'application/json' } });
    assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
    assert.deepEqual(JSON.parse(res.text).error,
      { status: 404, message: 'Not Found', description: 'The requested resource was not found on this server.' });
    const browser = await request(`${srv.url}/missing`, { headers: { Accept: 'text/html,application/json;q=0.9' } });
    assert.equal(browser.headers['content-type'], 'text/html; charset=utf-8');
  });
});

describe('exposeServerVersion: true', () => {
  let srv;
  before(async () => { srv = await startPipeline({ config: { exposeServerVersion: true }, files: { 'a.txt': 'A' } }); });
  after(() => srv.stop());

  it('names product, version, OS and Node in Server and in the footer', async () => {
    assert.equal((await request(`${srv.url}/a.txt`)).headers.server, VERSIONED);
    const res = await request(`${srv.url}/missing`);
    assert.ok(res.text.includes(`<footer>${VERSIONED}</footer>`));
  });
});

describe('customHeaders', () => {
  let srv;
  before(async () => {
    srv = await startPipeline({
      config: { customHeaders: { 'X-Frame-Options': 'DENY', 'X-Seen-Path': 'path={path}' } },
      files: { 'sub/a.txt': 'A' },
    });
  });
  after(() => srv.stop());

  it('adds the headers to files and errors, with {path} filled in', async () => {
    const res = await request(`${srv.url}/sub/a.txt?q=1`);
    assert.equal(res.headers['x-frame-options'], 'DENY');
    assert.equal(res.headers['x-seen-path'], 'path=/sub/a.txt?q=1');
    const err = await request(`${srv.url}/nope`);
    assert.equal(err.headers['x-frame-options'], 'DENY');
    assert.equal(err.headers['x-seen-path'], 'path=/nope');
  });
});

describe('custom error pages', () => {
  let srv;
  let defaultPage;
  before(async () => {
    srv = await startPipeline({
      config: {
        errorPages: [{ scode: 403, path: 'errors/forbidden.html' }, { scode: 404, path: 'errors/missing.html' }],
        page404: 'errors/not-this.html',
      },
      files: {
        'errors/forbidden.html': '<h1>Custom {errorMessage}</h1><p>{path}</p>',
        'errors/missing.html': '<h1>gone: {errorDesc}</h1>',
        'errors/not-this.html': 'page404 loses to errorPages',
        'dir/x.txt': 'x',
      },
    });
    defaultPage = await startPipeline({ files: { '404.html': '<p>site 404 for {path}</p>' } });
  });
  after(async () => { await srv.stop(); await defaultPage.stop(); });

  it('serves the errorPages entry for its status, placeholders filled and escaped', async () => {
    const res = await request(`${srv.url}/dir/?a=1&b="2"`);
    assert.equal(res.status, 403);
    assert.equal(res.headers['content-type'], 'text/html; charset=utf-8');
    assert.equal(res.text, '<h1>Custom 403 Forbidden</h1><p>/dir/?a=1&amp;b=%222%22</p>');
  });

  it('errorPages wins over page404', async () => {
    const res = await request(`${srv.url}/nope`);
    assert.equal(res.status, 404);
    assert.equal(res.text, '<h1>gone: The requested resource was not found on this server.</h1>');
  });

  it('uses page404 (default 404.html) when no errorPages entry applies', async () => {
    const res = await request(`${defaultPage.url}/nope`);
    assert.equal(res.status, 404);
    assert.equal(res.text, '<p>site 404 for /nope</p>');
  });

  it('keeps the built-in page for other statuses', async () => {
    const res = await request(`${srv.url}/x`, { method: 'POST' });
    assert.equal(res.status, 405);
    assert.match(res.text, /405 Method Not Allowed/);
  });
});

// Errors raised by server-side code go through the same renderer: a mod raises them here,
// in the pipeline run in-process on a real socket.
const ERROR_MOD = `module.exports = (req, res, log, config, next) => {
  if (req.url === '/mod-error') return res.error(500, 'TestMod/1.0', new Error('mod failed at secret-spot'));
  if (req.url === '/throws') throw new Error('thrown by script');
  return next();
};`;

describe('server-side errors: toggles', () => {
  const servers = {};
  before(async () => {
    for (const [name, config] of Object.entries({
      defaults: {},
      open: { stackHidden: false, exposeModsInErrorPages: true, serverAdministratorEmail: 'admin@example.com' },
      empty: { serverAdministratorEmail: '' },
    })) {
      servers[name] = await startPipeline({ config, files: { 'a.txt': 'A' }, mods: { 'error-mod.js': ERROR_MOD } });
    }
  });
  after(async () => { for (const s of Object.values(servers)) await s.stop(); });

  it('hides the stack and the mod by default, and says nothing about a contact while no address is set', async () => {
    for (const name of ['defaults', 'empty']) {
      const res = await request(`${servers[name].url}/mod-error`);
      assert.equal(res.status, 500);
      assert.ok(!res.text.includes('secret-spot'));
      assert.ok(!res.text.includes('TestMod'));
      assert.ok(!res.text.includes('[no contact information]'), name);
      assert.doesNotMatch(res.text, /contact/i, name);
      assert.match(res.text, /<a href="\/">Go to the home page<\/a>/);
    }
  });

  it('shows the stack with stackHidden: false and the mod with exposeModsInErrorPages: true', async () => {
    const res = await request(`${servers.open.url}/mod-error`);
    assert.ok(res.text.includes('mod failed at secret-spot'));
    assert.ok(res.text.includes('<footer>svr TestMod/1.0</footer>'));
    assert.ok(res.text.includes('admin[at]example[dot]com'));
  });

  it('shows no contact address on 4xx pages', async () => {
    const res = await request(`${servers.open.url}/missing`);
    assert.equal(res.status, 404);
    assert.ok(!res.text.includes('admin[at]'));
  });

  it('turns a throwing script into a 500, and the next request is served', async () => {
    const res = await request(`${servers.defaults.url}/throws`);
    assert.equal(res.status, 500);
    assert.ok(!res.text.includes('thrown by script'));
    assert.equal((await request(`${servers.defaults.url}/a.txt`)).text, 'A');
  });

  it('JSON errors carry the stack only when stackHidden is false', async () => {
    const hidden = JSON.parse((await request(`${servers.defaults.url}/mod-error`, { headers: { Accept: 'application/json' } })).text);
    assert.equal(hidden.error.stack, undefined);
    const open = JSON.parse((await request(`${servers.open.url}/mod-error`, { headers: { Accept: 'application/json' } })).text);
    assert.match(open.error.stack, /secret-spot/);
    assert.equal(open.error.mod, 'TestMod/1.0');
  });
});

// A custom 500 page with every placeholder; the mod's error message needs escaping.
const PLACEHOLDER_MOD = `module.exports = (req, res, log, config, next) => {
  if (req.url === '/fail') return res.error(500, 'TestMod/1.0', new Error('broke <here> & "there"'));
  return next();
};`;

describe('custom error pages: {stack}, {server} and {contact}', () => {
  const servers = {};
  before(async () => {
    for (const [name, config] of Object.entries({
      defaults: {},
      open: { stackHidden: false, exposeModsInErrorPages: true, serverAdministratorEmail: 'web.admin@example.com' },
    })) {
      servers[name] = await startPipeline({
        config: { ...config, errorPages: [{ scode: 500, path: 'errors/500.html' }] },
        files: { 'errors/500.html': '<p>{errorMessage}|{server}|{contact}</p><pre>{stack}</pre>' },
        mods: { 'fail-mod.js': PLACEHOLDER_MOD },
      });
    }
  });
  after(async () => { for (const s of Object.values(servers)) await s.stop(); });

  it('hides the stack and the mod, and shows the default contact as it is, by default', async () => {
    const res = await request(`${servers.defaults.url}/fail`);
    assert.equal(res.status, 500);
    assert.equal(res.text, '<p>500 Internal Server Error|svr|[no contact information]</p><pre>[error stack hidden]</pre>');
  });

  it('fills in the stack (escaped), the mod and the obfuscated address when they are exposed', async () => {
    const res = await request(`${servers.open.url}/fail`);
    assert.equal(res.status, 500);
    assert.match(res.text, /^<p>500 Internal Server Error\|svr TestMod\/1\.0\|web\[dot\]admin\[at\]example\[dot\]com<\/p><pre>Error: broke &lt;here&gt; &amp; &quot;there&quot;\n    at /);
    assert.ok(!res.text.includes('<here>'));
  });
});

test('an error page adds Accept to a Vary from customHeaders instead of replacing it', async () => {
  const server = await startPipeline({ config: { customHeaders: { Vary: 'Origin' } }, files: { 'index.html': 'x' } });
  try {
    const res = await request(`${server.url}/missing.html`);
    assert.equal(res.status, 404);
    assert.equal(res.headers.vary, 'Origin, Accept');
  } finally {
    await server.stop();
  }
});
