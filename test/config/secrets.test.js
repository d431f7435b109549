'use strict';
// A careless config cannot publish secrets.
//   - no wwwroot: a config error naming the key (no default that serves the config's directory);
//   - a web root that contains the config file, the TLS key or certificate (sni's too), or the state
//     directory: svr refuses to start unless allowSensitiveFilesInWebRoot is true, and even then
//     never serves them, nor their editor and backup copies, nor the mods directory;
//   - an old SVR.JS install directory as the web root: config.json, node_modules/, log/, temp/ are
//     never served.

const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { makeTempDir, writeFiles, getFreePort, runSvr, spawnSvr, request } = require('../support/helpers');
const { startPipeline } = require('../support/pipeline');
const { fixturePair, httpsRequest, startTlsPipeline } = require('../support/tls-helpers');

const pair = fixturePair({ names: [{ type: 2, value: 'localhost' }] });
const sniPair = fixturePair({ names: [{ type: 2, value: 'b.localhost' }] });

function siteDir(config, files = {}) {
  const dir = makeTempDir('svr-secrets-');
  writeFiles(dir, files);
  const configFile = path.join(dir, 'svr-config.json');
  fs.writeFileSync(configFile, JSON.stringify({ workers: 1, ...config }, null, 2));
  return { dir, configFile };
}

describe('wwwroot has no default', () => {
  it('a config without wwwroot is refused, naming the key (--check and start)', async () => {
    const { dir, configFile } = siteDir({ port: await getFreePort() }, { 'index.html': 'hi' });
    try {
      for (const args of [['--check', '--config', configFile], ['--config', configFile]]) {
        const run = await runSvr(args);
        assert.equal(run.code, args[0] === '--check' ? 1 : 78, args.join(' ')); // a refused config: 78 at start (not restarted by the unit)
        assert.match(run.stderr, /wwwroot: missing/, run.stderr);
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the embedded default config still starts and serves web/', async () => {
    const port = await getFreePort();
    const child = spawnSvr(['--port', String(port), '--workers', '1']);
    try {
      await Promise.race([
        child.err.waitFor(/listening on /),
        child.exited.then(({ code }) => { throw new Error(`exited ${code}: ${child.err.lines.join('\n')}`); }),
      ]);
      const res = await request(`http://127.0.0.1:${port}/`);
      assert.equal(res.status, 200);
    } finally {
      child.proc.kill('SIGTERM');
      await child.exited;
    }
  });
});

describe('a web root that contains secrets', () => {
  it('is refused by --check (exit 1) and at start (exit 78), the files named, without allowSensitiveFilesInWebRoot', async () => {
    const sport = await getFreePort();
    const { dir, configFile } = siteDir(
      { port: await getFreePort(), sport, secure: true, wwwroot: '.', cert: 'site.crt', key: 'site.key', stateDirectory: 'state' },
      { 'site.crt': pair.certPem, 'site.key': pair.keyPem, 'index.html': 'hi' });
    try {
      for (const args of [['--check', '--config', configFile], ['--config', configFile]]) {
        const run = await runSvr(args);
        assert.equal(run.code, args[0] === '--check' ? 1 : 78, `${args.join(' ')}: ${run.stderr}`);
        assert.match(run.stderr, /wwwroot: .*contains/, run.stderr);
        for (const name of ['svr-config.json', 'site.key', 'site.crt', 'the state directory state', 'allowSensitiveFilesInWebRoot']) {
          assert.ok(run.stderr.includes(name), `${name} in: ${run.stderr}`);
        }
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('is refused for an sni certificate and key inside it, the config file and site TLS files outside', async () => {
    const sport = await getFreePort();
    const { dir, configFile } = siteDir(
      {
        port: await getFreePort(), sport, secure: true, wwwroot: 'web', cert: 'site.crt', key: 'site.key', stateDirectory: 'state',
        sni: { 'b.localhost': { cert: 'web/tls/b.crt', key: 'web/tls/b.key' } },
      },
      { 'site.crt': pair.certPem, 'site.key': pair.keyPem, 'web/tls/b.crt': sniPair.certPem, 'web/tls/b.key': sniPair.keyPem, 'web/index.html': 'hi' });
    try {
      for (const args of [['--check', '--config', configFile], ['--config', configFile]]) {
        const run = await runSvr(args);
        assert.equal(run.code, args[0] === '--check' ? 1 : 78, `${args.join(' ')}: ${run.stderr}`);
        assert.match(run.stderr, /wwwroot: .*contains/, run.stderr);
        for (const name of [path.join('tls', 'b.crt'), path.join('tls', 'b.key')]) {
          assert.ok(run.stderr.includes(name), `${name} in: ${run.stderr}`);
        }
        assert.ok(!run.stderr.includes('site.key'), run.stderr);
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  describe('with allowSensitiveFilesInWebRoot: true', () => {
    let srv;
    let url;
    const secrets = ['svr-config.json', 'site.key', 'site.crt', 'sni-b.crt', 'sni-b.key'];
    const copies = (name) => [name, `${name}~`, `${name}.bak`, `${name}.orig`, `${name}.swp`, `#${name}#`, `.#${name}`];
    // In-process, behind the worker's listeners (support/pipeline.js): the harness writes the
    // config as svr-config.json in its directory, made the web root here; files go beside web/.
    before(async () => {
      const files = {
        'site.crt': pair.certPem, 'site.key': pair.keyPem, 'sni-b.crt': sniPair.certPem, 'sni-b.key': sniPair.keyPem,
        'index.html': 'hi', 'sub/page.bak': 'fine', 'mods/notes.txt': 'mods directory',
      };
      for (const name of secrets) for (const copy of copies(name).slice(1)) files[copy] = `copy of ${name}`;
      files['state/selfsigned-key.pem'] = 'state secret';
      srv = await startTlsPipeline({
        config: {
          wwwroot: '.', cert: 'site.crt', key: 'site.key', stateDirectory: 'state', allowSensitiveFilesInWebRoot: true, allowDotfiles: true,
          sni: { 'b.localhost': { cert: 'sni-b.crt', key: 'sni-b.key' } }, modsDirectory: 'mods',
        },
        files: Object.fromEntries(Object.entries(files).map(([name, content]) => [`../${name}`, content])),
      });
      assert.equal(path.basename(srv.configFile), 'svr-config.json');
      assert.equal(path.dirname(srv.configFile), srv.dir);
      url = srv.httpsUrl;
    });
    after(() => srv && srv.stop());

    it('never serves them nor their editor and backup copies', async () => {
      for (const name of secrets) {
        for (const copy of copies(name)) {
          const res = await httpsRequest(`${url}/${encodeURIComponent(copy)}`);
          assert.equal(res.status, 404, `${copy}: ${res.status} ${res.text.slice(0, 60)}`);
        }
      }
      assert.equal((await httpsRequest(`${url}/state/selfsigned-key.pem`)).status, 404);
      // The mods directory is code the workers run: never served, though nothing refuses the start.
      for (const p of ['/mods/notes.txt', '/mods/', '/mods']) {
        assert.equal((await httpsRequest(url + p)).status, 404, p);
      }
    });

    it('serves the rest', async () => {
      assert.equal((await httpsRequest(`${url}/index.html`)).text, 'hi');
      assert.equal((await httpsRequest(`${url}/sub/page.bak`)).text, 'fine');
    });
  });
});

describe('an old SVR.JS install directory as the web root', () => {
  let srv;
  let url;
  before(async () => {
    const files = {
      'svr.js': '// SVR.JS',
      'config.json': '{"users":[{"name":"admin","pass":"secret"}]}',
      'config.json.bak': 'old config',
      'node_modules/x/index.js': 'module',
      'log/access.log': 'log line',
      'temp/upload': 'temp',
      'index.html': 'old site',
    };
    srv = await startPipeline({
      config: { wwwroot: 'svrjs' },
      files: Object.fromEntries(Object.entries(files).map(([name, content]) => [`../svrjs/${name}`, content])),
    });
    url = srv.url;
  });
  after(() => srv && srv.stop());

  it('never serves its config.json, node_modules/, log/ or temp/', async () => {
    for (const p of ['/config.json', '/config.json.bak', '/node_modules/x/index.js', '/log/access.log', '/temp/upload', '/log/', '/temp']) {
      const res = await request(url + p);
      assert.equal(res.status, 404, `${p}: ${res.status}`);
    }
    assert.equal((await request(`${url}/index.html`)).text, 'old site');
  });
});
