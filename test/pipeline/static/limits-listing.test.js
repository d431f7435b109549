'use strict';
// A listing of a 20,000-entry directory ran for 150-200 ms on the event
// loop, holding every other request of the worker for that long. It now works in slices, and
// other requests are answered in between. Load on the shared machine varies, so the test compares
// the longest wait of a small request with the listing's own duration, not with a fixed time.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { startServer, request } = require('../../support/helpers');

const ENTRIES = 12000;

test('a large directory listing does not hold other requests for its whole duration', async (t) => {
  const server = await startServer({ config: { enableDirectoryListing: true }, files: { 'ok.txt': 'ok\n' } });
  try {
    const dir = path.join(server.root, 'many');
    fs.mkdirSync(dir);
    // Hard links to one empty file: each is an entry the listing reads and lstat()s like any file,
    // and a link costs the test a fraction of a new inode (15 vs 50-900 us here). file-5.txt is a
    // file of its own, so its size can change.
    const empty = path.join(server.dir, 'empty.txt');
    fs.writeFileSync(empty, '');
    for (let i = 0; i < ENTRIES; i++) if (i !== 5) fs.linkSync(empty, path.join(dir, `file-${i}.txt`));
    fs.writeFileSync(path.join(dir, 'file-5.txt'), '12345');
    const ratios = [];
    for (let round = 0; round < 3; round++) {
      // a new entry each round: a new version of the directory, so each round renders its page
      // rather than sharing the one before
      fs.writeFileSync(path.join(dir, `round-${round}.txt`), '');
      const started = Date.now();
      let done = false;
      const listing = request(`${server.url}/many/`).then((res) => { done = true; return { res, ms: Date.now() - started }; });
      let longest = 0;
      while (!done) {
        const probeStarted = Date.now();
        assert.equal((await request(`${server.url}/ok.txt`)).status, 200);
        longest = Math.max(longest, Date.now() - probeStarted);
      }
      const { res, ms } = await listing;
      assert.equal(res.status, 200);
      assert.match(res.text, /more entries not shown/);
      assert.match(res.text, /file-5\.txt<\/a><\/td><td class="s" data-v="5">5 B</);
      ratios.push(longest / ms);
      t.diagnostic(`listing of ${ENTRIES} entries: ${ms} ms; longest wait of a small request meanwhile: ${longest} ms`);
    }
    assert.ok(Math.min(...ratios) < 0.5, `small requests waited ${ratios.map((r) => r.toFixed(2)).join(', ')} of a listing's duration`);
    // the listing shows the directory as it is now: a new file appears, a size change shows
    fs.writeFileSync(path.join(dir, 'file-5.txt'), '1234567');
    fs.writeFileSync(path.join(dir, 'aaa-new.txt'), 'new');
    const fresh = await request(`${server.url}/many/`);
    assert.match(fresh.text, /file-5\.txt<\/a><\/td><td class="s" data-v="7">7 B</);
    assert.match(fresh.text, /aaa-new\.txt/);
    // 12,004 entries (the files, round-0..2.txt, aaa-new.txt): 10,000 examined, the rest counted
    assert.match(fresh.text, />2004 more entries not shown\.</);
    const json = JSON.parse((await request(`${server.url}/many/`, { headers: { Accept: 'application/json' } })).text);
    assert.equal(json.entries.length, 10000);
    assert.equal(json.truncated, 2004);
  } finally {
    await server.stop();
  }
});
