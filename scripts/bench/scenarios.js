'use strict';
// The scenarios: what is requested, and the check that a server's answer is the right one.
// prepare(url) fetches once before the load and returns the headers the load tool sends, plus a
// verdict: { headers, check: 'ok' | what is wrong, encoding }. A failed check does not stop the
// run: the load still runs (and its errors show), but the cell is left out of the ratios.
//
// Optional fields: servers (only these servers take part), connections (instead of --connections),
// busy (a busy loop child keeps one core busy during each run), tool ('h2load' or 's_time' instead of wrk),
// label (what the comparison is, for the tables).
const { fetchOnce, fetchH2Once } = require('./processes');
const { EXPECTED_BODY } = require('./cpu-work');
const { FIB_PATH, FIB_EXPECTED_BODY } = require('./fib-work');

const ACCEPT_COMPRESSED = 'br, gzip';
const BLOG_CONNECTIONS = [5, 32];
const TLS_NEW_CONN_CLIENTS = 8; // s_time clients, each one connection at a time

function describe(res) {
  const type = res.headers['content-type'] || 'no content-type';
  return `${res.status}, ${res.body.length} bytes, ${type}`;
}

function expectBody(size) {
  return (res) => (res.status === 200 && res.body.length === size ? 'ok' : `got ${describe(res)}; want 200, ${size} bytes`);
}

// Header names as sent, lower case, minus those a server adds per connection.
function headerNames(headers) {
  return Object.keys(headers).filter((name) => !name.startsWith(':') && name !== 'connection' && name !== 'keep-alive').sort();
}

async function checked(url, headers, verdict, fetcher = fetchOnce) {
  try {
    const res = await fetcher(url, headers);
    return { headers, check: verdict(res), status: res.status, encoding: res.headers['content-encoding'] || null, headerNames: headerNames(res.headers), tlsVersion: res.tlsVersion || null };
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

function prepareCompressed(url, acceptEncoding = ACCEPT_COMPRESSED, codings = ['br', 'gzip']) {
  return checked(url, { 'Accept-Encoding': acceptEncoding }, (res) => {
    const encoding = res.headers['content-encoding'];
    if (res.status !== 200) return `got ${describe(res)}; want 200`;
    return codings.includes(encoding) ? 'ok' : `not ${codings.join('/')} (${describe(res)}, ${encoding || 'identity'})`;
  });
}

function expectTls13(size) {
  const body = expectBody(size);
  return (res) => (body(res) !== 'ok' ? body(res) : res.tlsVersion === 'TLSv1.3' ? 'ok' : `negotiated ${res.tlsVersion}; want TLSv1.3`);
}

function expectH2(size) {
  const body = expectBody(size);
  return (res) => (body(res) !== 'ok' ? body(res) : res.alpn === 'h2' ? 'ok' : `ALPN ${res.alpn}; want h2`);
}

// The blog workload at 5 and 32 connections, quiet and with one core busy.
// and with the blog's own method: ab -c 5, a new connection per request.
function blogScenarios() {
  const verdict = (res) => (res.status === 200 && res.body.toString() === FIB_EXPECTED_BODY ? 'ok' : `got ${describe(res)}; want 200 and the ${FIB_EXPECTED_BODY.length} digits of fib(20000)`);
  const withAb = {
    name: 'blog-ab-c5',
    site: 'blog',
    path: FIB_PATH,
    tool: 'ab',
    connections: 5,
    busy: false,
    label: `GET ${FIB_PATH}, the blog's method: ab -c 5, HTTP/1.0, a new connection per request`,
    prepare: (url) => checked(url, {}, verdict),
  };
  return [...BLOG_CONNECTIONS.flatMap((connections) =>
    [false, true].map((busy) => ({
      name: `blog-c${connections}${busy ? '-busy' : ''}`,
      site: 'blog',
      path: FIB_PATH,
      connections,
      busy,
      label: `GET ${FIB_PATH}, ${connections} connections${busy ? ', one core busy' : ', quiet'}`,
      prepare: (url) => checked(url, {}, verdict),
    })),
  ), withAb];
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
    {
      name: 'compressed-100k',
      site: 'static',
      path: '/bench-100k.js',
      label: "cached br vs per-request gzip: svr's br kept in memory, nginx gzips each request",
      prepare: (url) => prepareCompressed(url),
    },
    {
      name: 'precompressed-100k',
      site: 'static',
      path: '/bench-100k-pre.js',
      servers: ['svr', 'nginx'],
      label: 'precompressed: svr its .br sibling (kept in memory), nginx gzip_static its .gz sibling',
      prepare: (url) => prepareCompressed(url),
    },
    {
      name: 'gzip-100k',
      site: 'gzip',
      path: '/bench-100k.js',
      servers: ['svr', 'nginx'],
      label: 'gzip level 6 on every request, both (svr keeps no file in memory on this site)',
      prepare: (url) => prepareCompressed(url, 'gzip', ['gzip']),
    },
    {
      name: 'cpu',
      site: 'cpu',
      path: '/cpu',
      prepare: (url) => checked(url, {}, (res) => (res.status === 200 && res.body.toString() === expectedWork ? 'ok' : `got ${describe(res)}; want 200 "${expectedWork}"`)),
    },
    ...blogScenarios(),
    {
      name: 'tls-html-1k',
      site: 'tls',
      path: '/bench-1k.html',
      label: 'HTTPS, TLS 1.3, HTTP/1.1 keep-alive (wrk)',
      prepare: (url) => checked(url, {}, expectTls13(sizes.html)),
    },
    {
      name: 'h2-html-1k',
      site: 'tls',
      path: '/bench-1k.html',
      tool: 'h2load',
      label: 'HTTPS, TLS 1.3, HTTP/2, one stream at a time per connection (h2load -m 1)',
      prepare: (url) => checked(url, {}, expectH2(sizes.html), fetchH2Once),
    },
    {
      name: 'tls-new-conn',
      site: 'tls',
      path: '/bench-1k.html',
      tool: 's_time',
      connections: TLS_NEW_CONN_CLIENTS,
      expectedBytes: sizes.html, // a client reading fewer bytes per connection than the page counts as errors
      label: `a new TLS 1.3 connection with a full handshake for each request (openssl s_time -new, HTTP/1.0, ${TLS_NEW_CONN_CLIENTS} clients side by side)`,
      prepare: (url) => checked(url, { Connection: 'close' }, expectTls13(sizes.html)),
    },
    {
      name: 'tls-resumed-conn',
      site: 'tls',
      path: '/bench-1k.html',
      label: 'a new TLS 1.3 connection for each request, offering the previous session for resumption (wrk with Connection: close; nginx resumed 1325 of 1326 in a check)',
      prepare: (url) => checked(url, { Connection: 'close' }, expectTls13(sizes.html)),
    },
  ];
}

module.exports = { scenarios, headerNames, BLOG_CONNECTIONS };
