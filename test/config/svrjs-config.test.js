'use strict';
// An SVR.JS config.json starts svr: every key SVR.JS 3.x/4.x knows is understood (implemented, or
// accepted with a one-line warning saying why), keys svr cannot honour are refused unless they
// hold SVR.JS's harmless defaults, and a missing wwwroot gets a migration hint.
// test/fixtures/svrjs-config.json holds every SVR.JS key with SVR.JS's shipped values (no wwwroot,
// as SVR.JS's own config.json); written for these tests.

const { describe, it, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { loadConfig } = require('../../lib/config/load');
const { runSvr } = require('../support/helpers');

const FIXTURE = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'fixtures', 'svrjs-config.json'), 'utf8'));
const NO_EFFECT = ['timestamp', 'version', 'optOutOfStatisticsServer', 'disableConfigurationSaving',
  'disableUnusedWorkerTermination', 'enableRemoteLogBrowsing',
  'enableOCSPStapling', 'allowPostfixDoubleSlashes'];

const dirs = [];
after(() => dirs.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true })));

function write(config) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svr-svrjs-config-'));
  dirs.push(dir);
  fs.mkdirSync(path.join(dir, 'site'));
  const file = path.join(dir, 'config.json');
  fs.writeFileSync(file, JSON.stringify(config, null, 2));
  return file;
}

describe('an SVR.JS config.json', () => {
  it('without wwwroot: exactly one error, naming wwwroot with a migration hint', () => {
    const file = write(FIXTURE);
    const { errors } = loadConfig(file);
    assert.equal(errors.length, 1, errors.join('\n'));
    assert.match(errors[0], /: wwwroot: missing: this looks like an SVR\.JS config.*Add "wwwroot"/);
  });

  it('with wwwroot: loads, with one warning per key that has no effect, each saying why', () => {
    const file = write({ ...FIXTURE, wwwroot: 'site' });
    const { errors, warnings, config } = loadConfig(file);
    assert.deepEqual(errors, []);
    assert.ok(config);
    // One per key without effect, and one saying which SVR.JS defaults it keeps (test/pipeline/svrjs-look.test.js).
    assert.equal(warnings.length, NO_EFFECT.length + 1, warnings.join('\n'));
    assert.match(warnings.at(-1), /: an SVR\.JS config \(it has .*\): as SVR\.JS did, allowPostToStaticFiles is true/);
    for (const key of NO_EFFECT) {
      const line = warnings.find((w) => w.startsWith(`${file}: ${key}: `));
      assert.match(line || '', /: accepted from SVR\.JS, no effect in svr: \S.+/, key);
    }
  });

  it('svr --check: warnings on stderr, "ok", exit 0', async () => {
    const file = write({ ...FIXTURE, wwwroot: 'site' });
    const { code, stdout, stderr } = await runSvr(['--check', '--config', file]);
    assert.equal(code, 0, stderr);
    assert.match(stdout, /: ok$/);
    const lines = stderr.split('\n').filter(Boolean);
    assert.equal(lines.length, NO_EFFECT.length + 1, stderr);
    assert.ok(lines.every((line) => line.startsWith('warning: ')), stderr);
  });

  it('svr --check without wwwroot: the hint, exit 1', async () => {
    const file = write(FIXTURE);
    const { code, stderr } = await runSvr(['--check', '--config', file]);
    assert.equal(code, 1);
    assert.match(stderr, /wwwroot: missing: this looks like an SVR\.JS config/);
    assert.match(stderr, /: 1 error$/);
  });

  it('domian (SVR.JS 2.x spelling) fills domain', () => {
    const { config } = loadConfig(write({ wwwroot: 'site', domian: 'example.com' }));
    assert.equal(config.domain, 'example.com');
  });

  it('a redirect rule without location and a bad blacklist entry are errors naming the key', () => {
    const { errors } = loadConfig(write({ wwwroot: 'site', nonStandardCodes: [{ url: '/a', scode: 301 }], blacklist: ['10.0.0.0/40'] }));
    assert.equal(errors.length, 2, errors.join('\n'));
    assert.ok(errors.some((e) => /: nonStandardCodes\[0\]\.location: missing: a 301 rule redirects/.test(e)), errors.join('\n'));
    assert.ok(errors.some((e) => /: blacklist\[0\]: expected an IP address or CIDR block/.test(e)), errors.join('\n'));
  });

  it('an unknown key that is not SVR.JS\'s is still an error, and "did you mean" names only near keys', () => {
    const { errors } = loadConfig(write({ wwwroot: 'site', enableIPSpoofin: true, enableCaching: true, enableDirListing: true }));
    assert.match(errors[0], /enableIPSpoofin: unknown key; did you mean "enableIPSpoofing"\?$/);
    assert.match(errors[1], /enableCaching: unknown key$/, 'not "enableLogging": a different word, not a typo');
    assert.match(errors[2], /enableDirListing: unknown key; did you mean "enableDirectoryListing"\?$/);
  });
});

describe('defaults (docs/svrjs-migration.md)', () => {
  // key -> [svr's default, SVR.JS's default]
  const DIFFERENT = {
    enableDirectoryListing: [false, true],
    exposeServerVersion: [false, true],
    exposeModsInErrorPages: [false, true],
    stackHidden: [true, false],
    allowStatus: [false, true],
    enableCompression: [true, false],
    enableIncludingHeadAndFootInHTML: [false, true],
  };

  it('a new config gets svr\'s safer defaults where they differ from SVR.JS', () => {
    const { config } = loadConfig(write({ wwwroot: 'site' }));
    for (const [key, [ours]] of Object.entries(DIFFERENT)) assert.equal(config[key], ours, key);
  });

  it('a saved SVR.JS config sets these keys itself, so it keeps SVR.JS\'s behaviour', () => {
    const { config } = loadConfig(write({ ...FIXTURE, wwwroot: 'site' }));
    for (const key of Object.keys(DIFFERENT)) {
      assert.equal(config[key], FIXTURE[key], key);
    }
    assert.equal(config.enableDirectoryListing, true);
    assert.equal(config.exposeServerVersion, true);
    assert.equal(config.allowStatus, true);
  });
});

describe('starting with an SVR.JS config', () => {
  const { startServer } = require('../support/helpers');

  it('logs one warning per key without effect, then serves', async () => {
    const server = await startServer({ config: { timestamp: 1700000000000, allowStatus: false, optOutOfStatisticsServer: false }, files: { 'index.html': 'home' } });
    try {
      const warnings = server.stderr().filter((line) => / warn .*accepted from SVR\.JS, no effect in svr: /.test(line));
      assert.equal(warnings.length, 2, server.stderr().join('\n'));
      assert.ok(warnings.some((line) => line.includes('timestamp: ')));
      assert.ok(warnings.some((line) => line.includes('optOutOfStatisticsServer: ')));
      const note = server.stderr().find((line) => / warn primary: .*: an SVR\.JS config \(it has "timestamp", "optOutOfStatisticsServer"\): as SVR\.JS did, /.test(line));
      assert.match(note || '', /enableIncludingHeadAndFootInHTML is true \(svr's default: false\)/, server.stderr().join('\n'));
    } finally {
      await server.stop();
    }
  });
});

// What the site answers is the pipeline's: it runs in-process (test/support/pipeline.js).
describe('serving a site with an SVR.JS config', () => {
  const { request } = require('../support/helpers');
  const { startPipeline } = require('../support/pipeline');

  it('the full SVR.JS config (wwwroot added) serves as SVR.JS would: listing on, version exposed, rewrite rules', async () => {
    const { port, sport, cert, key, ...rest } = FIXTURE; // the test picks its own port
    const server = await startPipeline({
      config: rest,
      files: { 'index.html': 'home', 'hidden.js': 'not for you', 'dir/a.txt': 'a' },
    });
    try {
      const home = await request(`${server.url}/`);
      assert.equal(home.status, 200);
      assert.match(home.headers.server, /^svr\/\d/, 'exposeServerVersion: true');
      assert.equal((await request(`${server.url}/hidden.js`)).status, 404, 'the rewrite rule sends it to a missing page');
      assert.equal((await request(`${server.url}/dir`)).status, 301);
      const listing = await request(`${server.url}/dir/`);
      assert.equal(listing.status, 200, 'enableDirectoryListing: true');
      assert.match(listing.text, /a\.txt/);
      assert.equal((await request(`${server.url}/svrjsstatus.svr`)).status, 200, 'allowStatus: true');
    } finally {
      await server.stop();
    }
  });
});
