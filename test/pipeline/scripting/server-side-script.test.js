'use strict';
// serverSideScript.js: every variable and helper in its scope, the automatic elseCallback rule,
// top-level return, methods, customvar persistence, parsePostData and its size limit, the script
// never served (the pipeline in-process), and a new script picked up on SIGHUP (svr.js started).

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { startServer, request, runSvr, makeTempDir, getFreePort } = require('../../support/helpers');
const { startPipeline } = require('../../support/pipeline');

// One script answering many routes; each test asks one of them.
const SCRIPT = String.raw`
if (href.startsWith('/vars')) {
  res.writeHead(200, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify({
    href, ext, search, origHref, defaultpage, users, page404, head, foot, fd, authUser,
    uobject: { pathname: uobject.pathname, search: uobject.search, query: uobject.query, host: uobject.host },
    url: req.url, method: req.method, port: configJSON.port, customHeaders: getCustomHeaders(),
    modules: [os.platform(), typeof http.request, typeof https.request, typeof url.parse, typeof fs.readFileSync,
      path.posix.join('a', 'b'), crypto.createHash('sha256').update('x').digest('hex').slice(0, 8),
      typeof stream.Readable, typeof readline.createInterface, require('node:util').format('%d', 7)],
    serverconsole: Object.keys(serverconsole).sort(),
    helpers: [checkHostname('*.example.com'), checkHref('/vars.TXT'), Object.keys(filterHeaders({ a: 1, b: null }))],
    bigint: String(10n ** 20n), whatwg: new URL('http://h/p?q=1').searchParams.get('q'), hoisted: declaredBelow(),
    file: __filename,
  }));
  return;
}
function declaredBelow() { return 'hoisted'; }
if (href === '/log') { serverconsole.climessage('hello from the script'); responseEnd('logged'); return; }
if (href === '/respond') { responseEnd('body'); return; }
if (href === '/writehead') { res.writeHead(201, 'Made It', { 'X-W': '1' }); res.end(); return; }
if (href === '/customvar') { customvar1 = (customvar1 || 0) + 1; responseEnd(String(customvar1)); return; }
if (href === '/redirect') { redirect(uobject.query.to, uobject.query.temp === '1', uobject.query.keep === '1', { 'X-R': 'yes' }); return; }
if (href === '/error') { callServerError(Number(uobject.query.code)); return; }
if (href === '/error-ext') { callServerError(500, 'MyExt/1.0', new Error('ext failure')); return; }
if (href === '/error-headers') { callServerError(429, { 'Retry-After': '7' }); return; }
if (href === '/method') { responseEnd(req.method); return; }
if (href === '/post') {
  parsePostData(function (fields, files, raw) {
    const described = {};
    for (const [name, file] of Object.entries(files)) {
      described[name] = { name: file.originalFilename, type: file.mimetype, size: file.size, content: fs.readFileSync(file.filepath, 'utf8') };
    }
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ fields, files: described, raw: raw ? raw.length : null }));
  });
  return;
}
if (href === '/return') { res.end('returned'); return; }
if (href === '/return') throw new Error('the script went on after return');
if (href === '/page.html' && search === '?flag') { disableEndElseCallbackExecute = true; res.end('flag'); }
if (href === '/page.html' && search === '?async') { disableEndElseCallbackExecute = true; setTimeout(function () { responseEnd('late'); }, 20); }
if (href === '/page.html' && search === '?async-pass') { disableEndElseCallbackExecute = true; setImmediate(function () { elseCallback(); }); }
if (href === '/page.html' && search === '?answer-without-return') { res.end('answered'); }
`;

const crypto = require('node:crypto');

// SVR.JS account formats: sha256(password + salt) by default, or PBKDF2-HMAC-SHA512.
const USERS = [
  { name: 'alice', pass: crypto.createHash('sha256').update('secret' + 'salt1').digest('hex'), salt: 'salt1' },
  { name: 'bob', pass: crypto.pbkdf2Sync('hunter2', 'salt2', 36250, 64, 'sha512').toString('hex'), salt: 'salt2', pbkdf2: true },
];
const basic = (name, password) => ({ authorization: `Basic ${Buffer.from(`${name}:${password}`).toString('base64')}` });

let server;
test.before(async () => {
  server = await startPipeline({
    config: { stateDirectory: 'state', users: USERS, page404: 'missing.html', customHeaders: { 'X-Path': 'at {path}' }, maxPostDataSize: 1000, exposeModsInErrorPages: true, stackHidden: false },
    files: { 'serverSideScript.js': SCRIPT, 'page.html': 'static page', '.head': '<H>', '.foot': '</F>' },
  });
});
test.after(() => server.stop());

test('the script sees href, ext, search, uobject, origHref and the SVR.JS constants', async () => {
  const res = await request(`${server.url}/vars.TXT?a=1&a=2&b=x`, { headers: { host: 'www.example.com' } });
  assert.equal(res.status, 200);
  const vars = JSON.parse(res.text);
  assert.equal(vars.href, '/vars.TXT');
  assert.equal(vars.ext, 'txt');
  assert.equal(vars.search, '?a=1&a=2&b=x');
  assert.equal(vars.origHref, '/vars.TXT');
  assert.deepEqual(vars.uobject, { pathname: '/vars.TXT', search: '?a=1&a=2&b=x', query: { a: '2', b: 'x' }, host: 'www.example.com' }, 'a repeated key keeps its last value (SVR.JS 3.x)');
  assert.equal(vars.url, '/vars.TXT?a=1&a=2&b=x');
  assert.equal(vars.defaultpage, 'index.html');
  assert.deepEqual(vars.users.map((user) => user.name), ['alice', 'bob']);
  assert.equal(vars.page404, 'missing.html');
  assert.equal(vars.head, '<H>');
  assert.equal(vars.foot, '</F>');
  assert.equal(vars.fd, '');
  assert.equal(vars.authUser, null);
  assert.equal(vars.port, server.port, 'configJSON is the config');
  assert.equal(vars.customHeaders.Server, 'svr');
  assert.equal(vars.customHeaders['X-Path'], 'at /vars.TXT?a=1&a=2&b=x');
});

test('authUser is the user whose Basic credentials match an account in users, else null', async () => {
  const authUser = async (headers) => JSON.parse((await request(`${server.url}/vars`, { headers })).text).authUser;
  assert.equal(await authUser(basic('alice', 'secret')), 'alice');
  assert.equal(await authUser(basic('bob', 'hunter2')), 'bob', 'PBKDF2 accounts');
  assert.equal(await authUser(basic('bob', 'hunter2')), 'bob', 'remembered');
  assert.equal(await authUser(basic('alice', 'wrong')), null);
  assert.equal(await authUser(basic('nobody', 'secret')), null);
  assert.equal(await authUser({ authorization: 'Bearer abc' }), null);
});

test('the script has the Node modules, require, the log functions and the SVR.JS helpers', async () => {
  const vars = JSON.parse((await request(`${server.url}/vars.TXT`, { headers: { host: 'www.example.com' } })).text);
  assert.deepEqual(vars.modules, [process.platform, 'function', 'function', 'function', 'function', 'a/b', '2d711642', 'function', 'function', '7']);
  assert.deepEqual(vars.serverconsole, ['climessage', 'errmessage', 'locerrmessage', 'locmessage', 'locwarnmessage', 'reqmessage', 'resmessage']);
  assert.deepEqual(vars.helpers, [true, true, ['a']]);
  assert.equal(vars.bigint, '100000000000000000000');
  assert.equal(vars.whatwg, '1');
  assert.equal(vars.hoisted, 'hoisted', 'function declarations in the body work');
  assert.equal(vars.file, path.join(server.dir, 'state', 'temp', 'serverSideScript.js'), "SVR.JS's temp/ in the state directory");
});

test('serverconsole writes to the server log', async () => {
  const since = server.stderr().length;
  assert.equal((await request(`${server.url}/log`)).text, '<H>logged</F>');
  await server.waitForLog(/serverSideScript\.js: hello from the script/, 'stderr', since);
});

test('responseEnd wraps the body in head and foot', async () => {
  const res = await request(`${server.url}/respond`);
  assert.equal(res.status, 200);
  assert.equal(res.text, '<H>body</F>');
});

test('res.writeHead(code, reason, headers) works', async () => {
  const res = await new Promise((resolve, reject) => {
    http.get(`${server.url}/writehead`, (r) => { r.resume(); r.on('end', () => resolve(r)); }).on('error', reject);
  });
  assert.equal(res.statusCode, 201);
  assert.equal(res.statusMessage, 'Made It');
  assert.equal(res.headers['x-w'], '1');
});

test('customvar1 persists across requests in a worker', async () => {
  const first = Number((await request(`${server.url}/customvar`)).text.replace(/<\/?[HF]>/g, ''));
  const second = Number((await request(`${server.url}/customvar`)).text.replace(/<\/?[HF]>/g, ''));
  assert.ok(first >= 1);
  assert.equal(second, first + 1);
});

test('redirect() gives 301, 302, 307, 308 with the extra headers', async () => {
  const cases = [['', '', 301], ['1', '', 302], ['1', '1', 307], ['', '1', 308]];
  for (const [temp, keep, status] of cases) {
    const res = await request(`${server.url}/redirect?to=/elsewhere&temp=${temp}&keep=${keep}`);
    assert.equal(res.status, status);
    assert.equal(res.headers.location, '/elsewhere');
    assert.equal(res.headers['x-r'], 'yes');
  }
});

test('callServerError(code) answers with that error page; an unknown code is 501', async () => {
  assert.equal((await request(`${server.url}/error?code=403`)).status, 403);
  assert.equal((await request(`${server.url}/error?code=418`)).status, 418);
  assert.equal((await request(`${server.url}/error?code=299`)).status, 501);
});

test('callServerError(500, extName, error) shows the name (exposeModsInErrorPages) and the stack (stackHidden false)', async () => {
  const res = await request(`${server.url}/error-ext`);
  assert.equal(res.status, 500);
  assert.match(res.text, /MyExt\/1\.0/);
  assert.match(res.text, /ext failure/);
  assert.match(res.text, /serverSideScript\.js:\d+/);
});

test('callServerError(code, headers) sets the headers', async () => {
  const res = await request(`${server.url}/error-headers`);
  assert.equal(res.status, 429);
  assert.equal(res.headers['retry-after'], '7');
});

test('a script with no return and no flag falls through to the static files', async () => {
  const res = await request(`${server.url}/page.html`);
  assert.equal(res.status, 200);
  assert.equal(res.text, 'static page');
});

test('a script that sets the flag and answers without return is not followed by the static handler', async () => {
  const since = server.stderr().length;
  const res = await request(`${server.url}/page.html?flag`);
  assert.equal(res.text, 'flag');
  // The guard in elseCallback would log this if the static handler had been called.
  await request(`${server.url}/log`);
  await server.waitForLog(/hello from the script/, 'stderr', since);
  assert.ok(!server.stderr().slice(since).some((line) => /passed the request on after answering/.test(line)));
});

test('a script that answers without return and without the flag gets the static handler after it (and a warning)', async () => {
  const since = server.stderr().length;
  const res = await request(`${server.url}/page.html?answer-without-return`);
  assert.equal(res.text, 'answered');
  await server.waitForLog(/passed the request on after answering it/, 'stderr', since);
});

test('a script that sets the flag answers asynchronously', async () => {
  const res = await request(`${server.url}/page.html?async`);
  assert.equal(res.status, 200);
  assert.equal(res.text, '<H>late</F>');
});

test('a script that sets the flag can pass the request on later with elseCallback()', async () => {
  const res = await request(`${server.url}/page.html?async-pass`);
  assert.equal(res.status, 200);
  assert.equal(res.text, 'static page');
});

test('a top-level return ends the script (no elseCallback, nothing after it runs)', async () => {
  const res = await request(`${server.url}/return`);
  assert.equal(res.status, 200);
  assert.equal(res.text, 'returned');
});

test('POST, PUT, DELETE and PATCH reach the script', async () => {
  for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
    // (Node's client sends a DELETE body without a length, so DELETE goes without one)
    const res = await request(`${server.url}/method`, { method, body: method === 'DELETE' ? undefined : 'x' });
    assert.equal(res.status, 200, method);
    assert.equal(res.text, `<H>${method}</F>`);
  }
});

test('without the script, a POST to a static file is refused by the static method policy', async () => {
  const res = await request(`${server.url}/page.html`, { method: 'PUT', body: 'x' });
  assert.equal(res.status, 405);
});

test('parsePostData parses a urlencoded body', async () => {
  const res = await request(`${server.url}/post`, {
    method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'a=1&b=two%20words&a=3',
  });
  assert.equal(res.status, 200);
  assert.deepEqual(JSON.parse(res.text).fields, { a: ['1', '3'], b: 'two words' });
});

test('parsePostData parses a JSON body; PUT is 405 with Allow: POST, as in SVR.JS', async () => {
  const res = await request(`${server.url}/post`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n: 5, s: 'x' }),
  });
  assert.equal(res.status, 200);
  assert.deepEqual(JSON.parse(res.text).fields, { n: 5, s: 'x' });
  const put = await request(`${server.url}/post`, {
    method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n: 5, s: 'x' }),
  });
  assert.equal(put.status, 405);
  assert.equal(put.headers.allow, 'POST');
});

test('parsePostData parses multipart/form-data with a file', async () => {
  const boundary = 'XyZ123';
  const body = [
    `--${boundary}`, 'Content-Disposition: form-data; name="title"', '', 'hello',
    `--${boundary}`, 'Content-Disposition: form-data; name="upload"; filename="notes.txt"', 'Content-Type: text/plain', '', 'file contents\r\nline 2',
    `--${boundary}--`, '',
  ].join('\r\n');
  const res = await request(`${server.url}/post`, { method: 'POST', headers: { 'content-type': `multipart/form-data; boundary=${boundary}` }, body });
  assert.equal(res.status, 200);
  const parsed = JSON.parse(res.text);
  assert.deepEqual(parsed.fields, { title: 'hello' });
  assert.deepEqual(parsed.files, { upload: { name: 'notes.txt', type: 'text/plain', size: 21, content: 'file contents\r\nline 2' } });
});

test('parsePostData: invalid JSON is 400, GET is 405', async () => {
  const bad = await request(`${server.url}/post`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{oops' });
  assert.equal(bad.status, 400);
  const get = await request(`${server.url}/post`);
  assert.equal(get.status, 405);
  assert.match(get.headers.allow, /POST/);
});

test('parsePostData: a body over maxPostDataSize is 413 (declared length)', async () => {
  const res = await request(`${server.url}/post`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'x'.repeat(1001) });
  assert.equal(res.status, 413);
  const ok = await request(`${server.url}/post`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'x'.repeat(1000) });
  assert.equal(ok.status, 200);
  assert.equal(JSON.parse(ok.text).raw, 1000);
});

test('parsePostData: a chunked body that grows over maxPostDataSize is 413', async () => {
  const res = await new Promise((resolve, reject) => {
    const req = http.request(`${server.url}/post`, { method: 'POST', headers: { 'content-type': 'text/plain', 'transfer-encoding': 'chunked' } }, (r) => {
      r.resume();
      r.on('end', () => resolve(r));
    });
    req.on('error', reject);
    req.write('y'.repeat(600));
    req.end('y'.repeat(600));
  });
  assert.equal(res.statusCode, 413);
});

test('serverSideScript.js is never served', async () => {
  const res = await request(`${server.url}/serverSideScript.js`);
  assert.equal(res.status, 404);
  assert.ok(!res.text.includes('customvar1'));
});

test('a script with no code serves the static files', async () => {
  const empty = await startPipeline({ files: { 'serverSideScript.js': '', 'page.html': 'static page' } });
  try {
    const res = await request(`${empty.url}/page.html`);
    assert.equal(res.status, 200);
    assert.equal(res.text, 'static page');
  } finally {
    await empty.stop();
  }
});

test('useWebRootServerSideScript false: the web root script does not run', async () => {
  const other = await startPipeline({ config: { useWebRootServerSideScript: false }, files: { 'serverSideScript.js': SCRIPT } });
  try {
    assert.equal((await request(`${other.url}/return`)).status, 404);
  } finally {
    await other.stop();
  }
});

test('a script with a syntax error stops the start with its file name and line', async () => {
  const dir = makeTempDir();
  fs.mkdirSync(path.join(dir, 'web'));
  fs.writeFileSync(path.join(dir, 'web', 'serverSideScript.js'), 'var ok = 1;\nif (ok) {\n');
  fs.writeFileSync(path.join(dir, 'svr-config.json'), JSON.stringify({ port: await getFreePort(), wwwroot: 'web', workers: 1 }));
  try {
    const result = await runSvr(['--config', path.join(dir, 'svr-config.json')]);
    assert.equal(result.code, 78);
    assert.match(result.stderr, /serverSideScript\.js: cannot load the server-side script: SyntaxError: .*\(at .*serverSideScript\.js:\d+\)/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a new script is picked up after SIGHUP without a failed request', async () => {
  const srv = await startServer({ config: { workers: 2 }, files: { 'serverSideScript.js': 'responseEnd("v1"); return;' } });
  try {
    assert.equal((await request(`${srv.url}/`)).text, 'v1');
    fs.writeFileSync(path.join(srv.root, 'serverSideScript.js'), 'responseEnd("v2"); return;');
    const since = srv.stderr().length;
    srv.signal('SIGHUP');
    const done = srv.waitForLog(/reload complete/, 'stderr', since).then(() => true);
    const seen = new Set();
    let finished = false;
    done.then(() => { finished = true; });
    const agent = new http.Agent({ keepAlive: true });
    let requests = 0;
    while (!finished) {
      const res = await request(`${srv.url}/`, { agent });
      requests++;
      assert.equal(res.status, 200, `request ${requests} during the reload`);
      seen.add(res.text);
    }
    // A new connection: old workers may still finish their keep-alive connections.
    const after = await request(`${srv.url}/`, { agent: false });
    assert.equal(after.text, 'v2');
    for (const text of seen) assert.ok(text === 'v1' || text === 'v2', text);
    agent.destroy();
  } finally {
    await srv.stop();
  }
});

test('a reload with a script that does not compile keeps the old workers serving', async () => {
  const srv = await startServer({ files: { 'serverSideScript.js': 'responseEnd("v1"); return;' } });
  try {
    fs.writeFileSync(path.join(srv.root, 'serverSideScript.js'), 'responseEnd("v2"; return;');
    const since = srv.stderr().length;
    srv.signal('SIGHUP');
    // Refused by the reload's start steps, before any new worker forks, as a refused config is.
    await srv.waitForLog(/^\S+ error primary: +\S*serverSideScript\.js: cannot load the server-side script: SyntaxError: .*\(at \S*serverSideScript\.js:1\)$/, 'stderr', since);
    const lines = srv.stderr().slice(since);
    assert.ok(lines.some((line) => line.endsWith('error primary: reload failed, still serving with the previous config:')), lines.join('\n'));
    assert.ok(!lines.some((line) => / ready$/.test(line)), lines.join('\n'));
    const res = await request(`${srv.url}/`, { agent: false });
    assert.equal(res.status, 200);
    assert.equal(res.text, 'v1');
  } finally {
    await srv.stop();
  }
});
