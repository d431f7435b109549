'use strict';
// Directory listings rendered once and shared (listing.js).
//
// A render stats every entry (10,000 at most) and makes a page of up to a few MB. Each request used
// to render its own and hold its page until the client had read it: 128 requests of one HTTP/2
// connection that read nothing took a worker from 50 MiB to 1.2 GiB, and 128 readers at once to
// 1.55 GiB. Now:
// - requests for the same page (URL path, HTML or JSON, directory version) share one render and
//   its bytes (one Buffer, which every response sends as it is), while the render is waiting or
//   began less than FRESH_MS before the request: every size and date shown was read at most
//   FRESH_MS before the request asked. An entry added, removed or renamed changes the directory's
//   version, so a page of the old version is not used;
// - a worker runs at most RENDERS_AT_ONCE renders at once (each works in slices of the event loop,
//   so other requests are served in between); RENDERS_WAITING more wait their turn, in order. A
//   request that would need one more gets null: the caller answers 503 with Retry-After.

const RENDERS_AT_ONCE = 2;
const RENDERS_WAITING = 16;
const FRESH_MS = 1000;

// An object, so that a test can stand in for the clock.
const clock = { now: () => performance.now() };

// The worker's render slots, shared by every site.
const slots = { running: 0, waiting: [] };

function isFull() {
  return slots.running >= RENDERS_AT_ONCE && slots.waiting.length >= RENDERS_WAITING;
}

// run() once a slot is free; the slot is given back when its promise settles.
function inSlot(run) {
  return new Promise((resolve) => {
    const start = () => {
      slots.running++;
      resolve(Promise.resolve().then(run).finally(releaseSlot));
    };
    if (slots.running < RENDERS_AT_ONCE) start();
    else slots.waiting.push(start);
  });
}

function releaseSlot() {
  slots.running--;
  const next = slots.waiting.shift();
  if (next) next();
}

// -> sharedPage(key, version, render): a promise of what render() resolves to (the page's Buffer),
// shared as above, or null when the worker's renders are all taken.
function createPageCache() {
  const pages = new Map(); // key -> { version, startedAt (null until the render begins), done, promise }
  let sweepTimer = null;

  const isFresh = (page) => page.startedAt === null || clock.now() - page.startedAt < FRESH_MS;

  // Every FRESH_MS while pages are kept, the finished ones no longer fresh are dropped; after that
  // a page is held only by the responses still sending it.
  function sweep() {
    sweepTimer = null;
    for (const [key, page] of pages) if (page.done && !isFresh(page)) pages.delete(key);
    for (const page of pages.values()) if (page.done) return scheduleSweep();
  }

  function scheduleSweep() {
    if (sweepTimer === null) sweepTimer = setTimeout(sweep, FRESH_MS).unref();
  }

  function sharedPage(key, version, render) {
    const kept = pages.get(key);
    if (kept && kept.version === version && isFresh(kept)) return kept.promise;
    if (isFull()) return null;
    const page = { version, startedAt: null, done: false, promise: null };
    page.promise = inSlot(() => {
      page.startedAt = clock.now();
      return render();
    }).then((body) => {
      page.done = true;
      scheduleSweep();
      return body;
    }, (error) => {
      if (pages.get(key) === page) pages.delete(key);
      throw error;
    });
    pages.set(key, page);
    return page.promise;
  }
  sharedPage.kept = () => pages.size; // pages held, for the tests
  return sharedPage;
}

module.exports = { createPageCache, inSlot, slots, clock, RENDERS_AT_ONCE, RENDERS_WAITING, FRESH_MS };
