'use strict';

const { test, describe, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const { loadConfig, checkConfig, compileRegexString, workerCount, DEFAULT_CONFIG_FILE } = require('../../lib/config/load');
const { findSyntaxErrorIndex } = require('../../lib/config/json-error');
const schema = require('../../config/svr-config.schema.json');

const REPO = path.join(__dirname, '..', '..');

const tempDirs = [];
after(() => tempDirs.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true })));

// A fresh directory holding svr-config.json (text or object) and a site/ directory for wwwroot.
function writeConfig(content) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svr-config-test-'));
  tempDirs.push(dir);
  fs.mkdirSync(path.join(dir, 'site'));
  const file = path.join(dir, 'svr-config.json');
  const text = typeof content === 'string' ? content : JSON.stringify(content, null, 2);
  fs.writeFileSync(file, text);
  return file;
}

function load(content, options) {
  return loadConfig(writeConfig(content), options);
}

// A valid config plus `extra`, so a test only sees the problems it planted.
function loadWith(extra, options) {
  return load({ wwwroot: 'site', ...extra }, options);
}

describe('the shipped config', () => {
  test('loads with no errors and serves web/ on port 8080', () => {
    const { config, errors, configFile } = loadConfig(DEFAULT_CONFIG_FILE);
    assert.deepEqual(errors, []);
    assert.equal(config.port, 8080);
    assert.equal(config.wwwroot, path.join(REPO, 'web'));
    assert.equal(configFile, path.join(REPO, 'config', 'svr-config.json'));
  });

  test('points editors at the schema beside it', () => {
    const shipped = JSON.parse(fs.readFileSync(DEFAULT_CONFIG_FILE, 'utf8'));
    assert.equal(shipped.$schema, './svr-config.schema.json');
    assert.ok(fs.existsSync(path.join(path.dirname(DEFAULT_CONFIG_FILE), shipped.$schema)));
  });
});

describe('JSON syntax errors give file, line and column', () => {
  const cases = [
    ['a missing value (V8 gives no position)', '{\n  "port": 80,\n  "wwwroot": }\n', 3, 14, /Unexpected token '?\}/],
    ['a trailing comma', '{\n  "port": 80,\n}\n', 3, 1, /property name|Unexpected token '?\}/],
    ['a truncated file', '{\n  "port": ', 2, 11, /Unexpected end of JSON input/],
    ['a truncated object', '{\n  "port": 80,\n', 3, 1, /property name|Unexpected end/],
    ['an empty file', '', 1, 1, /Unexpected end of JSON input/],
    ['text after the object', '{ "port": 80 } x', 1, 16, /non-whitespace character|Unexpected token '?x/],
    ['a single-quoted key', "{\n\t'port': 80 }", 2, 2, /property name|Unexpected token '/],
  ];
  // The wording is V8's and differs between Node 18 and 20; the place is ours and must not.
  for (const [what, text, line, column, words] of cases) {
    test(what, () => {
      const file = writeConfig(text);
      const { config, errors } = loadConfig(file);
      assert.equal(config, null);
      assert.equal(errors.length, 1);
      assert.ok(errors[0].startsWith(`${file}:${line}:${column}: JSON syntax error: `), errors[0]);
      assert.match(errors[0], words);
      assert.ok(!/position \d/.test(errors[0]), `raw offset left in: ${errors[0]}`);
    });
  }

  test('a byte order mark is not an error', () => {
    assert.deepEqual(load('\uFEFF{ "wwwroot": "site" }').errors, []);
  });
});

describe('the locator agrees with V8 wherever V8 reports a position', () => {
  const broken = ['{"a":1,}', '{"a" 1}', '[1,2', '{a:1}', '{"a":01}', '{"a":-}', '{"a":"\\q"}', '{"a":"x\ny"}',
    '[1] 2', '{"a":1.}', '{"a":1e}', '["\\u12G4"]', '{"a":[1,]}', '{"a":tru}', '{"a":}', '[1,]  '];
  for (const text of broken) {
    test(JSON.stringify(text), () => {
      let message;
      try { JSON.parse(text); } catch (error) { message = error.message; }
      const reported = /at position (\d+)/.exec(message);
      const token = /^Unexpected token '(.)'/.exec(message);
      if (reported) assert.equal(findSyntaxErrorIndex(text), Number(reported[1]), message);
      else if (token) assert.equal(text[findSyntaxErrorIndex(text)], token[1], message);
      else if (/Unexpected end/.test(message)) assert.equal(findSyntaxErrorIndex(text), text.length);
      else assert.fail(`V8 gave no position and no token: ${message}`);
    });
  }

  test('valid JSON has no error index', () => {
    assert.equal(findSyntaxErrorIndex(fs.readFileSync(DEFAULT_CONFIG_FILE, 'utf8')), -1);
    assert.equal(findSyntaxErrorIndex('{"a":[1,-2.5e+3,"\\u00e9\\n",true,false,null,{}]}'), -1);
  });
});

test('an unreadable file is one error naming the file and the reason', () => {
  const missing = path.join(os.tmpdir(), 'svr-no-such-dir', 'svr-config.json');
  const { config, errors } = loadConfig(missing);
  assert.equal(config, null);
  assert.deepEqual(errors, [`${missing}: cannot read the config file: no such file or directory`]);
});

describe('wrong types and values', () => {
  test('name the key, what was expected and what was found', () => {
    const file = writeConfig({ wwwroot: 'site', spubport: 'eighty' });
    assert.deepEqual(loadConfig(file).errors, [`${file}: spubport: expected an integer from 0 to 65535, found "eighty"`]);
  });

  test('a listen address: every form it may take, and what is wrong', () => {
    const forms = 'expected a port (0 to 65535), "ADDRESS:PORT", "[IPv6]:PORT" or a Unix socket path containing "/"';
    const file = writeConfig({ wwwroot: 'site', port: 'eighty', sport: '127.0.0.1:70000' });
    assert.deepEqual(loadConfig(file).errors, [
      `${file}: port: ${forms}, found "eighty"`,
      `${file}: sport: ${forms}, found "127.0.0.1:70000" (a port must be 0 to 65535)`,
    ]);
  });

  test('out of range', () => {
    assert.match(loadWith({ port: 70000 }).errors[0], /: port: expected a port \(0 to 65535\), .*, found 70000$/);
    assert.match(loadWith({ workers: 0 }).errors[0], /: workers: expected an integer from 1 to 1024 or null, found 0$/);
  });

  test('not one of the allowed values', () => {
    assert.match(loadWith({ logFormat: 'xml' }).errors[0], /: logFormat: expected one of "combined", "json", found "xml"$/);
  });

  test('one message per key even when several rules fail (type and enum)', () => {
    const { errors } = loadWith({ tlsMinVersion: 5 });
    assert.equal(errors.length, 1, errors.join('\n'));
    assert.match(errors[0], /: tlsMinVersion: expected one of "TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3", found 5$/);
  });

  test('schedulingPolicy: "none" by default, "rr" accepted, anything else named', () => {
    assert.equal(loadWith({}).config.schedulingPolicy, 'none');
    assert.equal(loadWith({ schedulingPolicy: 'rr' }).config.schedulingPolicy, 'rr');
    assert.match(loadWith({ schedulingPolicy: 'round-robin' }).errors[0], /: schedulingPolicy: expected one of "rr", "none", found "round-robin"$/);
  });

  test('a boolean given as a string', () => {
    assert.match(loadWith({ enableLogging: 'yes' }).errors[0], /: enableLogging: expected true or false, found "yes"$/);
  });

  test('nested keys are named with dots and brackets', () => {
    const { errors } = loadWith({ errorPages: [{ scode: 404, path: 'a.html' }, { scode: 200, path: 'b.html' }] });
    assert.deepEqual(errors.map((e) => e.split(': ').slice(1).join(': ')), [
      'errorPages[1].scode: expected an integer from 400 to 599, found 200',
    ]);
  });

  test('a missing required key names the key it lacks', () => {
    const { errors } = loadWith({ rewriteMap: [{ replacements: [] }] });
    assert.match(errors[0], /: rewriteMap\[0\]\.definingRegex: missing \(required\): expected a regular expression written as "\/pattern\/flags"$/);
  });

  test('a found value is shortened', () => {
    const { errors } = loadWith({ domain: ['x'.repeat(500)] });
    assert.match(errors[0], /: domain: expected a string, found \["x+\.\.\.$/);
    assert.ok(errors[0].length < 200);
  });

  test('header names and values in customHeaders are checked', () => {
    const { errors } = loadWith({ customHeaders: { 'Bad Name': 'x', 'X-Ok': 'a\r\nSet-Cookie: evil=1' } });
    assert.equal(errors.length, 2);
    assert.match(errors[0], /: customHeaders\["Bad Name"\]: invalid key name: expected a valid HTTP header name$/);
    assert.match(errors[1], /: customHeaders\["X-Ok"\]: expected a string without control characters, found "a\\r\\nSet-Cookie: evil=1"$/);
  });

  test('the whole file must be an object', () => {
    const file = writeConfig('[1, 2]');
    assert.deepEqual(loadConfig(file).errors, [`${file}: expected an object, found [1,2]`]);
  });

  test('headersTimeout may not exceed requestTimeout (Node would refuse to start)', () => {
    assert.match(loadWith({ headersTimeout: 70000 }).errors[0],
      /: headersTimeout: expected an integer <= requestTimeout \(60000\), found 70000$/);
    assert.deepEqual(loadWith({ headersTimeout: 70000, requestTimeout: 0 }).errors, []);
  });
});

describe('unknown keys', () => {
  test('a typo gets a "did you mean" hint', () => {
    const file = writeConfig({ wwwroot: 'site', prot: 8080 });
    assert.deepEqual(loadConfig(file).errors, [`${file}: prot: unknown key; did you mean "port"?`]);
  });

  test('case slips and abbreviations get a hint too', () => {
    const { errors } = loadWith({ stackhidden: true, enableDirListing: true });
    assert.match(errors[0], /: stackhidden: unknown key; did you mean "stackHidden"\?$/);
    assert.match(errors[1], /: enableDirListing: unknown key; did you mean "enableDirectoryListing"\?$/);
  });

  test('no hint when nothing is close', () => {
    const { errors } = loadWith({ frobnicate: 1 });
    assert.equal(errors.length, 1);
    assert.match(errors[0], /: frobnicate: unknown key$/);
  });

  test('inside a rewrite rule, against the keys a rule allows', () => {
    const { errors } = loadWith({ rewriteMap: [{ definingRegex: '/^\\/a/', replacements: [], isNotfile: true }] });
    assert.deepEqual(errors.length, 1);
    assert.match(errors[0], /: rewriteMap\[0\]\.isNotfile: unknown key; did you mean "isNotFile"\?$/);
  });

  test('inside an error page, the allowed keys are listed when none is close', () => {
    const { errors } = loadWith({ errorPages: [{ scode: 404, path: 'x.html', zzz: 1 }] });
    assert.match(errors[0], /: errorPages\[0\]\.zzz: unknown key \(allowed here: "scode", "path", "host", "ip"\)$/);
  });
});

test('several errors are all reported at once, in file order', () => {
  const file = writeConfig({
    port: 'eighty', wwwroot: 'nowhere', prot: 1, logFormat: 'xml',
    rewriteMap: [{ definingRegex: '/(/', replacements: [] }],
  });
  const { config, errors } = loadConfig(file);
  assert.equal(config, null);
  assert.deepEqual(errors.map((e) => e.slice(file.length + 2).split(':')[0]), [
    'port', 'wwwroot', 'prot', 'logFormat', 'rewriteMap[0].definingRegex',
  ]);
  assert.ok(errors.every((e) => e.startsWith(`${file}: `)));
});

describe('regular expressions in rewriteMap', () => {
  test('a pattern that does not compile names the key and the JS error', () => {
    const { errors } = loadWith({
      rewriteMap: [
        { definingRegex: '/^\\/ok/', replacements: [] },
        { definingRegex: '/^\\/ok/', replacements: [{ regex: '/[a-/', replacement: 'x' }] },
      ],
    });
    assert.equal(errors.length, 1);
    assert.match(errors[0], /: rewriteMap\[1\]\.replacements\[0\]\.regex: expected a regular expression written as "\/pattern\/flags", found "\/\[a-\/" \(Invalid regular expression: .*\)$/);
  });

  test('bad flags are reported', () => {
    const { errors } = loadWith({ rewriteMap: [{ definingRegex: '/a/q', replacements: [] }] });
    assert.match(errors[0], /: rewriteMap\[0\]\.definingRegex: .*found "\/a\/q" \(Invalid (regular expression )?flags/);
  });

  test('a pattern without slashes is reported', () => {
    const { errors } = loadWith({ rewriteMap: [{ definingRegex: '^/a', replacements: [] }] });
    assert.match(errors[0], /: rewriteMap\[0\]\.definingRegex: expected a regular expression written as "\/pattern\/flags", found "\^\/a"$/);
  });

  test('dontCompress entries are checked the same way', () => {
    assert.match(loadWith({ dontCompress: ['/ok/', '/(/'] }).errors[0], /: dontCompress\[1\]: .*Unterminated group/);
  });
});

describe('compileRegexString', () => {
  test('parses pattern and flags', () => {
    const re = compileRegexString('/^\\/app\\/(.*)$/i');
    assert.equal(re.source, '^\\/app\\/(.*)$');
    assert.equal(re.flags, 'i');
    assert.ok(re.test('/APP/x'));
  });

  test('the last slash ends the pattern', () => {
    assert.equal(compileRegexString('/a/b/g').source, 'a\\/b');
    assert.equal(compileRegexString('/a/b/g').flags, 'g');
  });

  test('throws a clear error for anything else', () => {
    assert.throws(() => compileRegexString('abc'), /"abc" is not a regular expression written as "\/pattern\/flags"/);
    assert.throws(() => compileRegexString(42), /42 is not a regular expression/);
    assert.throws(() => compileRegexString('/(/'), SyntaxError);
  });
});

describe('wwwroot', () => {
  test('missing: names the key, the resolved path and the reason', () => {
    const file = writeConfig({ wwwroot: 'nowhere' });
    const resolved = path.join(path.dirname(file), 'nowhere');
    assert.deepEqual(loadConfig(file).errors, [
      `${file}: wwwroot: expected an existing directory, found "nowhere" (${resolved}): no such file or directory`,
    ]);
  });

  test('a file is not a directory', () => {
    const file = writeConfig({ wwwroot: 'svr-config.json' });
    assert.match(loadConfig(file).errors[0], /: wwwroot: expected an existing directory, found .*: not a directory$/);
  });

  test('is required: no default serves the config file\'s own directory', () => {
    const file = writeConfig({});
    const { config, errors } = loadConfig(file);
    assert.equal(config, null);
    assert.equal(errors.length, 1);
    assert.match(errors[0], /: wwwroot: missing \(required\): expected the directory to serve, relative to the config file/);
  });

  test('that contains the config file is refused unless allowSensitiveFilesInWebRoot', () => {
    const file = writeConfig({ wwwroot: '.' });
    assert.match(loadConfig(file).errors[0], /: wwwroot: "\." contains the config file svr-config\.json: .*allowSensitiveFilesInWebRoot/);
    const allowed = writeConfig({ wwwroot: '.', allowSensitiveFilesInWebRoot: true });
    assert.deepEqual(loadConfig(allowed).errors, []);
  });
});

test('relative paths resolve against the config file\'s directory, not the working directory', () => {
  const file = writeConfig({
    wwwroot: 'site', cert: 'tls/cert.pem', key: '/etc/ssl/key.pem', modsDirectory: '../mods',
    stateDirectory: 'state', sni: { 'a.example': { cert: 'a.crt', key: 'a.key' } },
    page404: 'missing.html', errorPages: [{ scode: 500, path: 'errors/500.html' }],
  });
  const dir = path.dirname(file);
  const { config, errors } = loadConfig(path.relative(process.cwd(), file));
  assert.deepEqual(errors, []);
  assert.equal(config.wwwroot, path.join(dir, 'site'));
  assert.equal(config.cert, path.join(dir, 'tls', 'cert.pem'));
  assert.equal(config.key, '/etc/ssl/key.pem');
  assert.equal(config.modsDirectory, path.join(dir, '..', 'mods'));
  assert.equal(config.stateDirectory, path.join(dir, 'state'));
  assert.deepEqual(config.sni['a.example'], { cert: path.join(dir, 'a.crt'), key: path.join(dir, 'a.key') });
  // Relative to wwwroot (SVR.JS semantics), so left alone:
  assert.equal(config.page404, 'missing.html');
  assert.equal(config.errorPages[0].path, 'errors/500.html');
});

describe('defaults come from the schema', () => {
  test('every key left out takes its schema default', () => {
    const { config, errors } = load({ wwwroot: 'site' });
    assert.deepEqual(errors, []);
    const withDefaults = Object.entries(schema.properties).filter(([, s]) => 'default' in s);
    assert.ok(withDefaults.length > 40, 'the schema declares the defaults');
    for (const [key, property] of withDefaults) {
      if (key === 'wwwroot') continue; // set above
      assert.deepEqual(config[key], property.default, key);
    }
  });

  test('a few defaults that matter for safety', () => {
    const { config } = load({ wwwroot: 'site' });
    assert.equal(config.port, 80);
    assert.equal(config.workers, null);
    assert.equal(config.exposeServerVersion, false);
    assert.equal(config.stackHidden, true);
    assert.equal(config.allowDotfiles, false);
    assert.equal(config.enableDirectoryListing, false);
  });

  test('rewrite rules get their defaults too', () => {
    const { config } = loadWith({ rewriteMap: [{ definingRegex: '/a/', replacements: [] }] });
    assert.deepEqual(config.rewriteMap[0], {
      definingRegex: '/a/', replacements: [], isNotFile: false, isNotDirectory: false, append: '', allowDoubleSlashes: false,
    });
  });

  test('keys without a default stay absent', () => {
    const { config } = load({ wwwroot: 'site' });
    for (const key of ['cert', 'key', 'pubport', 'spubport', 'tlsMaxVersion', 'cipherSuite']) {
      assert.equal(key in config, false, key);
    }
  });

  test('the config file is never written', () => {
    const text = JSON.stringify({ wwwroot: 'site' });
    const file = writeConfig(text);
    loadConfig(file);
    assert.equal(fs.readFileSync(file, 'utf8'), text);
  });

  test('two loads do not share objects', () => {
    const file = writeConfig({ wwwroot: 'site' });
    const first = loadConfig(file).config;
    first.rewriteMap.push('changed');
    first.customHeaders.changed = 'yes';
    const second = loadConfig(file).config;
    assert.deepEqual(second.rewriteMap, []);
    assert.deepEqual(second.customHeaders, {});
  });
});

describe('the schema', () => {
  // Keys svr has promised since its first releases: each stays in the schema, described.
  const contractKeys = `$schema port wwwroot enableLogging logFormat workers shutdownTimeout keepAliveTimeout
    headersTimeout requestTimeout rewriteMap rewriteDirtyURLs enableDirectoryListing exposeServerVersion
    exposeModsInErrorPages disableTrailingSlashRedirects customHeaders errorPages page404 enableETag stackHidden
    serverAdministratorEmail allowDotfiles followSymlinks maxURLLength maxHeaderSize useWebRootServerSideScript
    modsDirectory maxPostDataSize users secure sport pubport spubport cert key sni enableHTTP2
    disableNonEncryptedServer disableToHTTPSRedirect domain tlsMinVersion tlsMaxVersion cipherSuite hstsMaxAge
    stateDirectory enableCompression dontCompress`.split(/\s+/);

  test('describes every key of the contract, each with a description', () => {
    for (const key of contractKeys) {
      assert.ok(schema.properties[key], `missing ${key}`);
      assert.ok(schema.properties[key].description, `no description for ${key}`);
    }
  });

  test('rejects unknown keys at the top level', () => {
    assert.equal(schema.additionalProperties, false);
  });
});

describe('keys declared by mods (extraValidators)', () => {
  const extraValidators = { greeting: (value) => typeof value === 'string' };

  test('are accepted when the validator says yes', () => {
    const { config, errors } = loadWith({ greeting: 'hi' }, { extraValidators });
    assert.deepEqual(errors, []);
    assert.equal(config.greeting, 'hi');
  });

  test('are an error naming the key when it says no', () => {
    const { errors } = loadWith({ greeting: 5 }, { extraValidators });
    assert.equal(errors.length, 1);
    assert.match(errors[0], /: greeting: invalid value 5 \(rejected by the mod that declares this key\)$/);
  });

  test('a validator that throws is reported, not fatal', () => {
    const throwing = { greeting: () => { throw new Error('boom'); } };
    assert.match(loadWith({ greeting: 1 }, { extraValidators: throwing }).errors[0], /: greeting: .*validator failed: boom$/);
  });

  test('are offered as hints, and are still unknown without the mod', () => {
    assert.match(loadWith({ greting: 'x' }, { extraValidators }).errors[0], /did you mean "greeting"\?$/);
    assert.match(loadWith({ greeting: 'x' }).errors[0], /: greeting: unknown key/);
  });
});

describe('checkConfig: a parsed object, checked as loadConfig checks a file', () => {
  const configFile = path.join(os.tmpdir(), 'svr-check-config', 'svr-config.json');
  // a web root of its own: one that holds the config file is refused (docs/security.md)
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'svr-check-root-'));
  after(() => fs.rmSync(root, { recursive: true, force: true }));

  test('fills the schema defaults and resolves paths against the config file\'s directory, in place', () => {
    const config = { wwwroot: root, modsDirectory: 'mods' };
    const result = checkConfig(config, { file: 'given.json', configFile });
    assert.deepEqual(result.errors, []);
    assert.equal(result.config, config, 'the object itself is completed');
    assert.equal(result.configFile, configFile);
    assert.equal(config.modsDirectory, path.join(path.dirname(configFile), 'mods'));
    assert.equal(config.enableCompression, schema.properties.enableCompression.default);
  });

  test('names the file it was given in every message, and hands out no config', () => {
    const result = checkConfig({ wwwroot: root, logFormat: 'xml', prot: 1 }, { file: 'given.json', configFile });
    assert.equal(result.config, null);
    assert.deepEqual(result.errors, [
      'given.json: logFormat: expected one of "combined", "json", found "xml"',
      'given.json: prot: unknown key; did you mean "port"?',
    ]);
  });
});

test('workerCount: null means one per available CPU', () => {
  const cpus = typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
  assert.equal(workerCount({ workers: null }), cpus);
  assert.equal(workerCount({ workers: 3 }), 3);
});

// svr.js --check: the command-line face of loadConfig (prints each error or "ok", exit 1 or 0).
describe('svr.js --check', () => {
  const { runSvr } = require('../support/helpers');

  async function checkFile(file) {
    return { file, ...(await runSvr(['--check', '--config', file])) };
  }

  const check = (content) => checkFile(writeConfig(content));

  test('the shipped config: "ok", exit 0', async () => {
    const { code, stdout, stderr } = await checkFile(DEFAULT_CONFIG_FILE);
    assert.equal(code, 0, stderr);
    assert.match(stdout, /: ok$/);
    assert.equal(stderr, '');
  });

  test('malformed JSON: file, line and column, exit 1', async () => {
    const { file, code, stderr } = await check('{\n  "port": 80,\n  "wwwroot": }\n');
    assert.equal(code, 1);
    assert.ok(stderr.includes(`${file}:3:14: JSON syntax error: `), stderr);
  });

  test('a wrong type: key path, expected and found, exit 1', async () => {
    const { file, code, stderr } = await check({ wwwroot: 'site', workers: 'many' });
    assert.equal(code, 1);
    assert.ok(stderr.includes(`${file}: workers: expected an integer from 1 to 1024 or null, found "many"`), stderr);
  });

  test('an unknown key: the hint, exit 1', async () => {
    const { file, code, stderr } = await check({ wwwroot: 'site', wwwRoot: 'x' });
    assert.equal(code, 1);
    assert.ok(stderr.includes(`${file}: wwwRoot: unknown key; did you mean "wwwroot"?`), stderr);
  });

  test('several errors: every one on its own line, exit 1', async () => {
    const { file, code, stdout, stderr } = await check({
      port: -1, wwwroot: 'nowhere', enableLoging: false,
      rewriteMap: [{ definingRegex: '/(/', replacements: [] }],
    });
    assert.equal(code, 1);
    assert.doesNotMatch(stdout, /ok/);
    const lines = stderr.split('\n');
    for (const key of ['port', 'wwwroot', 'enableLoging', 'rewriteMap[0].definingRegex']) {
      assert.ok(lines.some((line) => line.startsWith(`${file}: ${key}: `)), `${key} missing in:\n${stderr}`);
    }
  });
});
