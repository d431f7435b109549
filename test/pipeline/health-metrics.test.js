'use strict';
// The health and metrics paths are a stage (lib/pipeline/health-metrics.js): after the block
// list, before rewriting; never access-logged; the metrics path on the site's listeners only with
// metrics.onSitePort (test/health-metrics.test.js runs them in a real server, totals included).

const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const { startPipeline } = require('../support/pipeline');
const { loadConfig } = require('../../lib/config/load');
const { writeFiles, makeTempDir } = require('../support/helpers');

function get(base, path, { from = '127.0.0.1' } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request(`${base}${path}`, { localAddress: from, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => { text += chunk; });
      res.on('end', () => resolve({ status: res.statusCode, text }));
    });
    req.on('error', reject);
    req.end();
  });
}

const scrapeMetrics = async () => 'svr_up 1\n';

test('health and metrics answer before rewriting, are not logged, and the blacklist applies to them', async (t) => {
  const site = await startPipeline({
    config: {
      health: { path: '/healthz' },
      metrics: { path: '/metrics', onSitePort: true },
      blacklist: ['127.0.0.2'],
      rewriteMap: [{ definingRegex: '/.*/', replacements: [{ regex: '/.*/', replacement: '/index.html' }] }],
    },
    files: { 'index.html': 'home' },
    scrapeMetrics,
  });
  t.after(() => site.stop());
  assert.deepEqual(await get(site.url, '/healthz?probe=1'), { status: 200, text: 'ok\n' });
  assert.deepEqual(await get(site.url, '/metrics'), { status: 200, text: 'svr_up 1\n' });
  assert.deepEqual(await get(site.url, '/other'), { status: 200, text: 'home' }); // rewritten
  assert.equal((await get(site.url, '/healthz', { from: '127.0.0.2' })).status, 403);
  assert.equal((await get(site.url, '/metrics', { from: '127.0.0.2' })).status, 403);
  await site.waitForLog(/"GET \/metrics HTTP\/1\.1" 403 /, 'stdout');
  const logged = site.stdout().filter((line) => / 200 /.test(line));
  assert.equal(logged.length, 1, logged.join('\n')); // only /other: the health and metrics answers are not logged
});

test('metrics are off on the site port by default (onSitePort: false), and a config that serves them nowhere warns', async (t) => {
  const site = await startPipeline({
    config: { health: { path: '/healthz' }, metrics: { path: '/metrics' } },
    files: { 'index.html': 'home' },
    scrapeMetrics,
  });
  t.after(() => site.stop());
  assert.equal((await get(site.url, '/metrics')).status, 404);
  assert.equal((await get(site.url, '/healthz')).status, 200);
  assert.equal(site.config.metrics.onSitePort, false);

  const dir = makeTempDir('svr-metrics-warning-');
  t.after(() => require('node:fs').rmSync(dir, { recursive: true, force: true }));
  const configs = {
    nowhere: { metrics: {} },
    ownPort: { metrics: { port: 9464 } },
    sitePort: { metrics: { onSitePort: true } },
  };
  writeFiles(dir, Object.fromEntries(Object.entries(configs).map(([name, config]) => [`${name}.json`, JSON.stringify({ wwwroot: '.', ...config })])));
  const warnings = (name) => loadConfig(`${dir}/${name}.json`).warnings;
  assert.equal(warnings('nowhere').length, 1);
  assert.match(warnings('nowhere')[0], /nowhere\.json: metrics: counted but served nowhere: set metrics\.port .* or metrics\.onSitePort: true/);
  assert.deepEqual(warnings('ownPort'), []);
  assert.deepEqual(warnings('sitePort'), []);
});
