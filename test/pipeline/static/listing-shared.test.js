'use strict';
// Directory listings under load (lib/pipeline/static/listing-pages.js). Each request used to render
// its own page, statting every entry, and hold it until its client had read it: one HTTP/2
// connection asking 128 times for a 100,000-file directory and reading nothing took a worker from
// 50 MiB to 1.2 GiB. Now requests for a page share one render and one Buffer while it is under a
// second old, and a worker runs 2 renders at once with 16 more waiting; beyond, 503.
// In this process, with the listing's clock stood in for, fs.lstatSync counted (one call per entry
// a render looks at) and the Buffers handed to res.end() compared: counting, not timing.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { request, waitUntil } = require('../../support/helpers');
const { startPipeline } = require('../../support/pipeline');
const { clock, slots, inSlot, RENDERS_AT_ONCE, RENDERS_WAITING, FRESH_MS } = require('../../../lib/pipeline/static/listing-pages');

const ENTRIES = 1000;

let srv;
test.before(async () => {
  srv = await startPipeline({ config: { enableDirectoryListing: true }, files: { 'ok.txt': 'ok\n' } });
});
test.after(() => srv.stop());

// lstatSync calls on entries named like `pattern`, and the bodies res.end() got for `url`.
function observe(t, pattern, url) {
  const seen = { lstats: 0, bodies: [] };
  const { lstatSync } = fs;
  t.mock.method(fs, 'lstatSync', (file, ...rest) => {
    if (pattern.test(path.basename(String(file)))) seen.lstats++;
    return lstatSync(file, ...rest);
  });
  const { end } = http.ServerResponse.prototype;
  t.mock.method(http.ServerResponse.prototype, 'end', function observedEnd(chunk, ...rest) {
    if (this.req && this.req.url === url && chunk !== undefined) seen.bodies.push(chunk);
    return end.call(this, chunk, ...rest);
  });
  return seen;
}

test('20 requests at once for a listing of 1,000 entries: one render, one Buffer sent to all; sizes at most a second old', async (t) => {
  let now = 5000000;
  t.mock.method(clock, 'now', () => now);
  const dir = path.join(srv.root, 'many');
  fs.mkdirSync(dir);
  const empty = path.join(srv.dir, 'empty.txt');
  fs.writeFileSync(empty, '');
  for (let i = 0; i < ENTRIES; i++) if (i !== 5) fs.linkSync(empty, path.join(dir, `file-${i}.txt`));
  fs.writeFileSync(path.join(dir, 'file-5.txt'), '12345');
  const seen = observe(t, /^file-\d+\.txt$/, '/many/');

  const answers = await Promise.all(Array.from({ length: 20 }, () => request(`${srv.url}/many/`)));
  for (const res of answers) {
    assert.equal(res.status, 200);
    assert.equal(res.text, answers[0].text);
  }
  assert.match(answers[0].text, /file-5\.txt<\/a><\/td><td class="s" data-v="5">5 B</);
  assert.equal(seen.lstats, ENTRIES, 'each entry statted once, for one render');
  assert.equal(seen.bodies.length, 20);
  assert.ok(Buffer.isBuffer(seen.bodies[0]));
  assert.ok(seen.bodies.every((body) => body === seen.bodies[0]), 'the same Buffer for every response');

  // A size change leaves the directory's version as it is: the page is shared until a second
  // after its render began, then rendered again.
  fs.writeFileSync(path.join(dir, 'file-5.txt'), '1234567');
  now += FRESH_MS - 1;
  assert.match((await request(`${srv.url}/many/`)).text, /file-5\.txt<\/a><\/td><td class="s" data-v="5">5 B</);
  now += 1;
  assert.match((await request(`${srv.url}/many/`)).text, /file-5\.txt<\/a><\/td><td class="s" data-v="7">7 B</);
  assert.equal(seen.lstats, 2 * ENTRIES);

  // A new or renamed entry makes a new version of the directory: listed at once.
  fs.writeFileSync(path.join(dir, 'aaa-new.txt'), 'new');
  assert.match((await request(`${srv.url}/many/`)).text, /aaa-new\.txt/);
  assert.equal(seen.lstats, 3 * ENTRIES);
  fs.renameSync(path.join(dir, 'file-7.txt'), path.join(dir, 'file-renamed.txt'));
  const renamed = (await request(`${srv.url}/many/`)).text;
  assert.match(renamed, /file-renamed\.txt/);
  assert.doesNotMatch(renamed, /file-7\.txt/);
});

test(`at most ${RENDERS_AT_ONCE} renders at once and ${RENDERS_WAITING} waiting per worker; one more gets 503 with Retry-After`, async (t) => {
  const directories = Array.from({ length: RENDERS_WAITING + 1 }, (_, i) => `d${i}`);
  for (const name of directories) {
    fs.mkdirSync(path.join(srv.root, name));
    fs.writeFileSync(path.join(srv.root, name, `in-${name}.txt`), name);
  }
  // The test takes the worker's render slots itself, and gives them back when it chooses.
  let giveBack;
  const held = new Promise((resolve) => { giveBack = resolve; });
  const holders = Array.from({ length: RENDERS_AT_ONCE }, () => inSlot(() => held));
  assert.equal(slots.running, RENDERS_AT_ONCE);

  const answered = new Set();
  const waiting = directories.slice(0, RENDERS_WAITING).map((name) =>
    request(`${srv.url}/${name}/`).then((res) => { answered.add(name); return res; }));
  assert.ok(await waitUntil(() => slots.waiting.length === RENDERS_WAITING), `${slots.waiting.length} renders waiting`);

  const refused = await request(`${srv.url}/${directories[RENDERS_WAITING]}/`);
  assert.equal(refused.status, 503);
  assert.equal(refused.headers['retry-after'], '1');
  const json = await request(`${srv.url}/d0/`, { headers: { accept: 'application/json' } });
  assert.equal(json.status, 503, 'the JSON page is another render');
  assert.equal((await request(`${srv.url}/ok.txt`)).status, 200, 'a file is served meanwhile');
  assert.equal(answered.size, 0, 'no listing answered while the renders are held');

  giveBack();
  await Promise.all(holders);
  const results = await Promise.all(waiting);
  results.forEach((res, i) => {
    assert.equal(res.status, 200);
    assert.match(res.text, new RegExp(`in-d${i}\\.txt`));
  });
  assert.equal(slots.running, 0);
  assert.equal(slots.waiting.length, 0);
  assert.equal((await request(`${srv.url}/${directories[RENDERS_WAITING]}/`)).status, 200, 'a render slot is free again');
});
