'use strict';
// Smaller SVR.JS features an SVR.JS site relies on: automatic error pages (.N / N.html),
// errorPages and rewriteMap limited by host/ip, index.xhtml, wwwredirect, environmentVariables.

const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { startPipeline } = require('../support/pipeline');
const { request } = require('../support/helpers');

describe('SVR.JS site features', () => {
  let site;
  before(async () => {
    site = await startPipeline({
      config: {
        domain: 'example.com',
        wwwredirect: true,
        errorPages: [
          { scode: 404, path: 'a-404.html', host: 'a.example' },
          { scode: 404, path: 'local-404.html', ip: '10.9.9.9' },
        ],
        rewriteMap: [
          { definingRegex: '/^\\/here$/', ip: '127.0.0.1', replacements: [{ regex: '/.*/', replacement: '/here.txt' }] },
          { definingRegex: '/^\\/there$/', ip: '10.9.9.9', replacements: [{ regex: '/.*/', replacement: '/here.txt' }] },
        ],
        nonStandardCodes: [{ url: '/blocked', scode: 403 }],
        environmentVariables: { SVR_TEST_GREETING: 'hello from the config' },
      },
      files: {
        '403.html': '<p>custom forbidden: {path}</p>',
        '.500': 'dot five hundred',
        'a-404.html': 'a host 404',
        'local-404.html': 'never: another address',
        'here.txt': 'here',
        'x/index.xhtml': '<html xmlns="http://www.w3.org/1999/xhtml"><body>xhtml index</body></html>',
        'serverSideScript.js': "if (req.url === '/env') { res.writeHead(200); res.end(process.env.SVR_TEST_GREETING); } else if (req.url === '/boom') { callServerError(500); } else elseCallback();",
      },
    });
  });
  after(() => site.stop());

  it('automatic error pages: N.html and .N in the web root', async () => {
    const forbidden = await request(`${site.url}/blocked`);
    assert.equal(forbidden.status, 403);
    assert.equal(forbidden.text, '<p>custom forbidden: /blocked</p>');
    const boom = await request(`${site.url}/boom`);
    assert.equal(boom.status, 500);
    assert.equal(boom.text, 'dot five hundred');
  });

  it('errorPages entries with host/ip apply only to matching requests', async () => {
    assert.equal((await request(`${site.url}/missing`, { headers: { host: 'a.example' } })).text, 'a host 404');
    const other = await request(`${site.url}/missing`, { headers: { host: 'b.example' } });
    assert.equal(other.status, 404);
    assert.doesNotMatch(other.text, /a host 404|never/);
  });

  it('rewriteMap entries with ip apply only to connections to that address', async () => {
    assert.equal((await request(`${site.url}/here`)).text, 'here');
    assert.equal((await request(`${site.url}/there`)).status, 404);
  });

  it('index.xhtml is a directory index', async () => {
    const res = await request(`${site.url}/x/`);
    assert.equal(res.status, 200);
    assert.match(res.text, /xhtml index/);
  });

  it('wwwredirect: Host `domain` goes to www.`domain`, port and URL kept', async () => {
    const res = await request(`${site.url}/here?x=1`, { headers: { host: 'example.com:8080' } });
    assert.equal(res.status, 301);
    assert.equal(res.headers.location, 'http://www.example.com:8080/here?x=1');
    assert.equal((await request(`${site.url}/here`, { headers: { host: 'www.example.com' } })).status, 200);
  });

  it('environmentVariables are set before serverSideScript.js runs', async () => {
    assert.equal((await request(`${site.url}/env`)).text, 'hello from the config');
  });
});

describe('a web root that is an old SVR.JS installation', () => {
  const files = {
    'index.html': 'site', 'svr.js': '// SVR.JS itself', 'config.json': '{"users":[{"name":"a","pass":"hash","salt":"s"}]}',
    'node_modules/dep/index.js': 'dep', 'log/2024.log': 'log line', 'temp/requestCounter': '1', 'mods/mod.js': 'mod',
  };

  it('does not serve SVR.JS\'s config, code, modules, logs or temp files (disableServerSideScriptExpose)', async () => {
    const site = await startPipeline({ config: {}, files });
    try {
      for (const p of ['/config.json', '/svr.js', '/node_modules/dep/index.js', '/log/2024.log', '/temp/requestCounter', '/mods/mod.js']) {
        assert.equal((await request(`${site.url}${p}`)).status, 404, p);
      }
      assert.equal((await request(`${site.url}/`)).text, 'site');
    } finally {
      await site.stop();
    }
  });

  it('serves them with disableServerSideScriptExpose: false, as SVR.JS, except config.json (password hashes)', async () => {
    const site = await startPipeline({ config: { disableServerSideScriptExpose: false }, files });
    try {
      assert.equal((await request(`${site.url}/log/2024.log`)).status, 200);
      assert.equal((await request(`${site.url}/config.json`)).status, 404);
    } finally {
      await site.stop();
    }
  });
});

describe('allowStatus', () => {
  it('serves /svrjsstatus.svr with this worker\'s counts when on', async () => {
    const site = await startPipeline({ config: { allowStatus: true }, files: { 'index.html': 'home' } });
    try {
      await request(`${site.url}/`);
      await request(`${site.url}/nope`);
      const res = await request(`${site.url}/svrjsstatus.svr`);
      assert.equal(res.status, 200);
      assert.match(res.text, /Requests \(this worker\)<\/th><td>3</);
      assert.match(res.text, /Client errors \(4xx\)<\/th><td>1</);
      assert.match(res.text, new RegExp(`Worker pid</th><td>${process.pid}<`));
    } finally {
      await site.stop();
    }
  });

  it('is off by default (404)', async () => {
    const site = await startPipeline({ config: {} });
    try {
      assert.equal((await request(`${site.url}/svrjsstatus.svr`)).status, 404);
    } finally {
      await site.stop();
    }
  });
});

describe('enableIncludingHeadAndFootInHTML', () => {
  const files = { 'head.html': '<div>HEAD</div>', '.foot': '<div>FOOT</div>', 'page.html': '<p>plain page</p>', 'dir/index.html': '<p>index</p>', 'data.txt': 'text' };

  it('wraps static .html pages (and index pages) in .head/head.html and .foot/foot.html', async () => {
    const site = await startPipeline({ config: { enableIncludingHeadAndFootInHTML: true }, files });
    try {
      const page = await request(`${site.url}/page.html`);
      assert.equal(page.text, '<div>HEAD</div><p>plain page</p><div>FOOT</div>');
      assert.equal(Number(page.headers['content-length']), Buffer.byteLength(page.text));
      assert.equal((await request(`${site.url}/dir/`)).text, '<div>HEAD</div><p>index</p><div>FOOT</div>');
      assert.equal((await request(`${site.url}/data.txt`)).text, 'text', 'only HTML');
      assert.equal((await request(`${site.url}/head.html`)).text, '<div>HEAD</div>', 'the head file itself is not wrapped');
      const again = await request(`${site.url}/page.html`, { headers: { 'if-none-match': page.headers.etag } });
      assert.equal(again.status, 304);
      const ranged = await request(`${site.url}/page.html`, { headers: { range: 'bytes=0-3', 'accept-encoding': 'gzip, br' } });
      assert.equal(ranged.status, 200, 'no ranges on a wrapped page');
      assert.equal(ranged.headers['content-encoding'], undefined, 'no compression on a wrapped page');
      const head = await request(`${site.url}/page.html`, { method: 'HEAD' });
      assert.equal(head.headers['content-length'], page.headers['content-length']);
    } finally {
      await site.stop();
    }
  });

  it('wraps an empty page and a page streamed in many chunks alike', async () => {
    const big = 'x'.repeat(700 * 1024) + '\n';
    const site = await startPipeline({ config: { enableIncludingHeadAndFootInHTML: true }, files: { ...files, 'empty.html': '', 'big.html': big } });
    try {
      const empty = await request(`${site.url}/empty.html`);
      assert.equal(empty.text, '<div>HEAD</div><div>FOOT</div>');
      assert.equal(Number(empty.headers['content-length']), empty.body.length);
      const large = await request(`${site.url}/big.html`);
      assert.equal(large.text, `<div>HEAD</div>${big}<div>FOOT</div>`);
      assert.equal(Number(large.headers['content-length']), large.body.length);
      assert.match(large.headers['content-type'], /^text\/html/);
    } finally {
      await site.stop();
    }
  });

  it('is off by default: pages are served as they are', async () => {
    const site = await startPipeline({ config: {}, files });
    try {
      assert.equal((await request(`${site.url}/page.html`)).text, '<p>plain page</p>');
    } finally {
      await site.stop();
    }
  });
});

describe('listing customisation', () => {
  it('.dirhead/HEAD.html, .maindesc and .dirfoot/FOOT.html in the listed directory', async () => {
    const site = await startPipeline({
      config: { enableDirectoryListing: true, enableDirectoryListingWithDefaultHead: true },
      files: {
        'head.html': '<div>SITEHEAD</div>', 'foot.html': '<div>SITEFOOT</div>',
        'a/HEAD.html': '<div>AHEAD</div>', 'a/.maindesc': '<p>ADESC</p>', 'a/.dirfoot': '<div>AFOOT</div>', 'a/file.txt': 'x',
        'b/file.txt': 'y',
      },
    });
    try {
      const a = (await request(`${site.url}/a/`)).text;
      assert.match(a, /<h1>[^<]*<\/h1>\n<div>AHEAD<\/div><table>/);
      assert.match(a, /<\/table><hr\/><p>ADESC<\/p><div>AFOOT<\/div><footer>/);
      const b = (await request(`${site.url}/b/`)).text;
      assert.match(b, /<div>SITEHEAD<\/div><table>/, 'the site head stands in (enableDirectoryListingWithDefaultHead)');
      assert.match(b, /<\/table><div>SITEFOOT<\/div><footer>/);
    } finally {
      await site.stop();
    }
  });
});

describe('allowDoubleSlashes', () => {
  it('keeps "/a//b" as sent (no redirect) and serves the file; otherwise 301 to the clean URL', async () => {
    const on = await startPipeline({ config: { allowDoubleSlashes: true }, files: { 'a/b.txt': 'b' } });
    const off = await startPipeline({ config: {}, files: { 'a/b.txt': 'b' } });
    try {
      const kept = await request(`${on.url}/a//b.txt`);
      assert.equal(kept.status, 200);
      assert.equal(kept.text, 'b');
      const dotted = await new Promise((resolve, reject) => {
        // a raw path: the URL class would remove the "." segment before sending
        require('node:http').get({ host: '127.0.0.1', port: new URL(on.url).port, path: '/a/./b.txt' }, (res) => { res.resume(); resolve(res); }).on('error', reject);
      });
      assert.equal(dotted.statusCode, 301, 'other untidiness is still cleaned');
      const redirected = await request(`${off.url}/a//b.txt`);
      assert.equal(redirected.status, 301);
      assert.equal(redirected.headers.location, '/a/b.txt');
    } finally {
      await on.stop();
      await off.stop();
    }
  });
});
