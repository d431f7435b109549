'use strict';
// The `fastcgi` and `cgi` keys as a config check sees them, and SVR.JS's gateway mods' files
// (GreenRhombus, RedBrick, OrangeCircle) turned into the svr keys that do the same.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { loadConfig } = require('../../lib/config/load');
const { makeTempDir, writeFiles } = require('../support/helpers');

function check(config, files = {}) {
  const dir = makeTempDir();
  fs.mkdirSync(path.join(dir, 'web'));
  writeFiles(dir, { 'config.json': JSON.stringify({ wwwroot: 'web', ...config }), ...files });
  return { dir, ...loadConfig(path.join(dir, 'config.json')) };
}

test('the minimum configs take their defaults: .php, index.php, the front controller; /cgi-bin/', () => {
  const { config, errors } = check({ fastcgi: [{ upstream: 'unix:/run/php/php8.2-fpm.sock' }, { upstream: '127.0.0.1:9000' }], cgi: [{ path: '/cgi-bin/' }] });
  assert.deepEqual(errors, []);
  assert.deepEqual(config.fastcgi[0], {
    upstream: 'unix:/run/php/php8.2-fpm.sock', path: '/', extensions: ['.php'], index: ['index.php'], frontController: '/index.php',
    env: {}, cache: false, maxConnections: 64, requestBuffering: true, maxBodySize: 209715200, timeouts: { connect: 5000, firstByte: 60000, idle: 60000, keepAlive: 200 },
  });
  assert.equal(config.fastcgi[1].upstream, '127.0.0.1:9000');
  assert.deepEqual(config.cgi[0], { path: '/cgi-bin/', extensions: [], interpreter: null, env: {}, timeout: 60000, maxProcesses: 16, requestBuffering: true, maxBodySize: 209715200 });
});

test('bad gateway rules are named with their key', () => {
  const { errors } = check({
    fastcgi: [{ upstream: 'php-fpm.sock' }, { upstream: 'unix:/x.sock', extensions: ['php'] }, {}],
    cgi: [{}, { path: 'cgi-bin' }],
  });
  const text = errors.join('\n');
  assert.match(text, /fastcgi\[0\]\.upstream: expected "unix:\/path\/to\/php-fpm\.sock" or "HOST:PORT"/);
  assert.match(text, /fastcgi\[1\]\.extensions\[0\]: expected a file extension starting with "\."/);
  assert.match(text, /fastcgi\[2\]\.upstream: missing \(required\)/);
  assert.match(text, /cgi\[0\]: expected "path" \(a script directory such as "\/cgi-bin\/"\) or "extensions"/);
  assert.match(text, /cgi\[1\]\.path: expected a path prefix starting with "\/"/);
});

test('SVR.JS gateway mods\' files beside the config: each says the svr key that does the same', () => {
  const { errors, warnings } = check({ blacklist: [] }, {
    'greenrhombus-config.json': JSON.stringify({ multiConfig: { 'example.com': { socketPath: '/run/php/php8.2-fpm.sock' }, 'example.org': { host: '127.0.0.1', port: 9001, path: '/app' } } }),
    'redbrick-scriptexts.json': JSON.stringify(['.php', '.cgi']),
    'redbrick-interpreters.json': JSON.stringify({ '.php': ['/usr/bin/php-cgi'] }),
    'orangecircle-config.json': JSON.stringify({ path: '/scgi', port: 4000 }),
  });
  assert.deepEqual(errors, []);
  const text = warnings.join('\n');
  assert.ok(text.includes('"fastcgi": [{"upstream":"unix:/run/php/php8.2-fpm.sock","host":"example.com"},{"upstream":"127.0.0.1:9001","path":"/app/","host":"example.org"}]'), text);
  assert.ok(text.includes('"cgi": [{"path":"/cgi-bin/"},{"extensions":[".php"],"interpreter":["/usr/bin/php-cgi"]},{"extensions":[".cgi"]}]'), text);
  assert.match(text, /orangecircle-config\.json: OrangeCircle .* svr has no SCGI gateway/);
  // The suggested keys are themselves a valid config.
  const suggested = check({ fastcgi: [{ upstream: 'unix:/run/php/php8.2-fpm.sock', host: 'example.com' }, { upstream: '127.0.0.1:9001', path: '/app/', host: 'example.org' }], cgi: [{ path: '/cgi-bin/' }, { extensions: ['.php'], interpreter: ['/usr/bin/php-cgi'] }, { extensions: ['.cgi'] }] });
  assert.deepEqual(suggested.errors, []);
  assert.ok(!suggested.warnings.some((w) => /GreenRhombus|RedBrick/.test(w)), 'no hint once nothing is left to translate');
});

test('a gateway mod file that is not JSON is named', () => {
  const { warnings } = check({}, { 'greenrhombus-config.json': '{ nope' });
  assert.ok(warnings.some((w) => /greenrhombus-config\.json: cannot be read as JSON/.test(w)), warnings.join('\n'));
});

test('gateway mod files in the state directory (where svr keeps legacy mods\' files) are found too', () => {
  const { warnings } = check({ stateDirectory: 'state' }, { 'state/redbrick-scriptexts.json': JSON.stringify(['.cgi']) });
  assert.ok(warnings.some((w) => /state\/redbrick-scriptexts\.json: RedBrick .*"cgi": \[\{"path":"\/cgi-bin\/"\},\{"extensions":\[".cgi"\]\}\]/.test(w)), warnings.join('\n'));
});

test('a PHP-FPM socket that is not there is a warning naming the key, not an error', () => {
  const dir = makeTempDir();
  const { errors, warnings } = check({ fastcgi: [{ upstream: `unix:${path.join(dir, 'php-fpm.sock')}` }, { upstream: '127.0.0.1:9000' }] });
  assert.deepEqual(errors, []);
  assert.equal(warnings.length, 1, warnings.join('\n'));
  assert.match(warnings[0], /fastcgi\[0\]\.upstream: .*php-fpm\.sock does not exist \(yet\): its requests get 502 until PHP-FPM listens there/);
});

test('a CGI interpreter that is not there is a warning naming the key', () => {
  const { errors, warnings } = check({ cgi: [{ extensions: ['.py'], interpreter: ['/nonexistent/python9'] }, { extensions: ['.sh'], interpreter: ['/bin/sh'] }] });
  assert.deepEqual(errors, []);
  assert.equal(warnings.length, 1, warnings.join('\n'));
  assert.match(warnings[0], /cgi\[0\]\.interpreter: \/nonexistent\/python9 does not exist: the rule's scripts get 502/);
});
