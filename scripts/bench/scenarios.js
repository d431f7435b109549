'use strict';
// The scenarios: what is requested, and the check that a server's answer is the right one.
// prepare(baseUrl) fetches once before the load and returns the headers wrk sends, plus a
// verdict: { headers, check: 'ok' | what is wrong, encoding }. A failed check does not stop the
// run: the load still runs (and its errors show), but the cell is left out of the ratios.
const { fetchOnce } = require('./processes');
const { EXPECTED_BODY } = require('./cpu-work');

const ACCEPT_COMPRESSED = 'br, gzip';

function describe(res) {
  const type = res.headers['content-type'] || 'no content-type';
  return `${res.status}, ${res.body.length} bytes, ${type}`;
}

function expectBody(size) {
  return (res) => (res.status === 200 && res.body.length === size ? 'ok' : `got ${describe(res)}; want 200, ${size} bytes`);
}

async function checked(url, headers, verdict) {
  try {
    const res = await fetchOnce(url, headers);
    return { headers, check: verdict(res), status: res.status, encoding: res.headers['content-encoding'] || null };
  } catch (err) {
    return { headers, check: `request failed: ${err.code || err.message}`, unreachable: true };
  }
}

async function prepareRevalidation(url) {
  let first;
  try {
    first = await fetchOnce(url);
  } catch (err) {
    return { headers: {}, check: `request failed: ${err.code || err.message}`, unreachable: true };
  }
  const etag = first.headers.etag;
  if (first.status !== 200 || !etag) return { headers: {}, check: `no ETag to revalidate (${describe(first)})`, skip: true };
  return checked(url, { 'If-None-Match': etag }, (res) => (res.status === 304 ? 'ok' : `If-None-Match got ${describe(res)}; want 304`));
}

function prepareCompressed(url) {
  return checked(url, { 'Accept-Encoding': ACCEPT_COMPRESSED }, (res) => {
    const encoding = res.headers['content-encoding'];
    if (res.status !== 200) return `got ${describe(res)}; want 200`;
    return encoding === 'br' || encoding === 'gzip' ? 'ok' : `not compressed (${describe(res)})`;
  });
}

function scenarios(fixtures) {
  const { sizes, dirEntries } = fixtures;
  const lastEntry = `file-${String(dirEntries - 1).padStart(4, '0')}.txt`;
  const expectedWork = EXPECTED_BODY;
  return [
    { name: 'html-1k', site: 'static', path: '/bench-1k.html', prepare: (url) => checked(url, {}, expectBody(sizes.html)) },
    { name: 'js-100k', site: 'static', path: '/bench-100k.js', prepare: (url) => checked(url, {}, expectBody(sizes.js)) },
    { name: 'bin-4m', site: 'static', path: '/bench-4m.bin', prepare: (url) => checked(url, {}, expectBody(sizes.bin)) },
    { name: 'revalidate-304', site: 'static', path: '/bench-100k.js', prepare: prepareRevalidation },
    {
      name: 'dir-1000',
      site: 'static',
      path: '/dir1000/',
      prepare: (url) =>
        checked(url, {}, (res) => (res.status === 200 && res.body.includes(lastEntry) ? 'ok' : `got ${describe(res)}; want a listing with ${lastEntry}`)),
    },
    { name: 'compressed-100k', site: 'static', path: '/bench-100k.js', prepare: prepareCompressed },
    {
      name: 'cpu',
      site: 'cpu',
      path: '/cpu',
      prepare: (url) => checked(url, {}, (res) => (res.status === 200 && res.body.toString() === expectedWork ? 'ok' : `got ${describe(res)}; want 200 "${expectedWork}"`)),
    },
  ];
}

module.exports = { scenarios };
