'use strict';
// The README's tour and "Then" list, as a newcomer runs them: the lines `npm start` logs (step 1),
// and the virtual-host one-liner.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSvr, getFreePort, startServer, request } = require('../support/helpers');

const ROOT = path.resolve(__dirname, '..', '..');
const README = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');

// The first code block after a heading line.
function blockAfter(heading) {
  const rest = README.slice(README.indexOf(heading));
  return /```\w*\n([\s\S]*?)```/.exec(rest)[1];
}

// A README line as a pattern: times, numbers and the checkout's path may differ.
function linePattern(line) {
  const escaped = line.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
    .replace('/home/you/svr', ROOT.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  return new RegExp(`^${escaped.replace(/^\S+Z/, '\\S+Z').replace(/\d+/g, '\\d+')}$`);
}

test('tour step 1: `npm start` logs the lines the README shows, in that order', async (t) => {
  const shown = blockAfter('### 1. Start it').trim().split('\n');
  assert.equal(shown.length, 4, shown.join('\n'));
  const port = await getFreePort();
  // The default config (npm start), on a free port, with the README's 2 workers.
  const svr = spawnSvr(['--port', String(port), '--workers', '2'], { cwd: ROOT });
  t.after(async () => { svr.proc.kill('SIGTERM'); await svr.exited; });
  await svr.err.waitFor(/listening on /);
  const logged = svr.err.lines.slice(0, shown.length);
  shown.forEach((line, i) => assert.match(logged[i], linePattern(line), `line ${i + 1}: README\n${line}\nlogged\n${logged.join('\n')}`));
});

test('"Then": the wwwrootVHost one-liner serves b.example from its own root, other hosts from wwwroot', async (t) => {
  const snippet = /`("wwwrootVHost": \[[^`]*\])`/.exec(README);
  assert.ok(snippet, 'the README shows a wwwrootVHost line');
  const vhosts = JSON.parse(`{${snippet[1]}}`).wwwrootVHost;
  assert.deepEqual(vhosts.map((v) => v.host), ['b.example']);
  const server = await startServer({
    config: { wwwrootVHost: vhosts.map((v) => ({ ...v, wwwroot: 'b' })) },
    files: { 'index.html': 'main site\n', '../b/index.html': 'site b\n' },
  });
  t.after(() => server.stop());
  assert.equal((await request(`${server.url}/`, { headers: { Host: 'b.example' } })).text, 'site b\n');
  assert.equal((await request(`${server.url}/`, { headers: { Host: 'other.example' } })).text, 'main site\n');
});
