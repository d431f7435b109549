'use strict';
// The files every server serves, generated once per benchmark run in a temp dir:
//   static/bench-1k.html    1 KiB of HTML
//   static/bench-100k.js    100 KiB of JavaScript (varied, so it compresses like real code)
//   static/bench-4m.bin     4 MiB of random bytes
//   static/dir1000/         a directory of 1,000 small files
//   static/bench-100k-pre.js the same JavaScript with precompressed siblings .br (quality 11) and
//                           .gz (level 9), for svr's precompressed br vs nginx's gzip_static
//   gzip/bench-100k.js      the same JavaScript again, on a site where svr keeps no file in memory,
//                           so both svr and nginx gzip it on every request
//   cpu/serverSideScript.js svr's script for the CPU-bound scenario (a function body, SVR.JS style)
//   blog/serverSideScript.js the SVR.JS blog's /fibonacci?n=N workload (fib-work.js)
//   tls/bench-1k.html       the 1 KiB page again, for the HTTPS rows
//   hello/serverSideScript.js "Hello World!" for every request (hello-work.js)
//   backend/item.json       1 KiB, what the proxy rows' backend serves
//   certificate/            a self-signed certificate for svr and nginx (with openssl)
const crypto = require('crypto');
const fs = require('fs');
const os = require('os');
const path = require('path');
const zlib = require('zlib');
const { SCRIPT_BODY } = require('./cpu-work');
const { FIB_SCRIPT_BODY } = require('./fib-work');
const { HELLO_SCRIPT_BODY } = require('./hello-work');
const { createCertificate } = require('./certificate');

const KIB = 1024;
const DIR_ENTRIES = 1000;

function padTo(text, size, filler) {
  let result = text;
  while (Buffer.byteLength(result) < size) result += filler;
  return Buffer.from(result).subarray(0, size);
}

function html1k() {
  const head = '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>bench</title></head><body>\n';
  const tail = '</body></html>\n';
  const body = padTo(head, KIB - tail.length, '<p>svr benchmark page</p>\n');
  return Buffer.concat([body, Buffer.from(tail)]);
}

// Deterministic pseudo-random source code, varied enough to compress about like real code (~3.5:1).
const WORDS = ['user', 'item', 'count', 'value', 'index', 'result', 'buffer', 'node', 'request', 'total', 'cache', 'state'];

function javascript(size) {
  let seed = 42;
  const next = (limit) => (seed = (seed * 1103515245 + 12345) % 2147483648) % limit;
  const word = () => WORDS[next(WORDS.length)];
  const token = () => next(2 ** 30).toString(36);
  let source = "'use strict';\n";
  while (source.length < size) {
    const name = `${word()}${token()}`;
    const [a, b] = [word(), word() + next(10)];
    source += `function ${name}(${a}, ${b}) {\n  const ${word()}_${token()} = ${a} * ${next(99991)} + ${b};\n`;
    source += `  return ${a} > ${next(50000)} ? '${token()}${token()}' : ${b}.toString(${2 + next(30)});\n}\n`;
  }
  return Buffer.from(source).subarray(0, size);
}

function writeDirectoryOfEntries(dir) {
  fs.mkdirSync(dir);
  for (let i = 0; i < DIR_ENTRIES; i++) {
    fs.writeFileSync(path.join(dir, `file-${String(i).padStart(4, '0')}.txt`), `entry ${i}\n`);
  }
}

function writePrecompressed(file, data) {
  fs.writeFileSync(file, data);
  fs.writeFileSync(`${file}.gz`, zlib.gzipSync(data, { level: 9 }));
  fs.writeFileSync(`${file}.br`, zlib.brotliCompressSync(data, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11 } }));
}

// openssl: the path of the openssl command, or null (then the HTTPS rows are skipped).
function createFixtures({ openssl } = {}) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'svr-bench-'));
  const sites = {};
  for (const site of ['static', 'gzip', 'cpu', 'blog', 'tls', 'hello', 'backend']) {
    sites[site] = path.join(root, site);
    fs.mkdirSync(sites[site]);
  }
  const staticRoot = sites.static;
  const files = {
    html: html1k(),
    js: javascript(100 * KIB),
    bin: crypto.randomBytes(4 * KIB * KIB),
  };
  fs.writeFileSync(path.join(staticRoot, 'bench-1k.html'), files.html);
  fs.writeFileSync(path.join(staticRoot, 'bench-100k.js'), files.js);
  fs.writeFileSync(path.join(staticRoot, 'bench-4m.bin'), files.bin);
  writeDirectoryOfEntries(path.join(staticRoot, 'dir1000'));
  writePrecompressed(path.join(staticRoot, 'bench-100k-pre.js'), files.js);
  fs.writeFileSync(path.join(sites.gzip, 'bench-100k.js'), files.js);
  fs.writeFileSync(path.join(sites.cpu, 'serverSideScript.js'), SCRIPT_BODY);
  fs.writeFileSync(path.join(sites.blog, 'serverSideScript.js'), FIB_SCRIPT_BODY);
  fs.writeFileSync(path.join(sites.tls, 'bench-1k.html'), files.html);
  fs.writeFileSync(path.join(sites.hello, 'serverSideScript.js'), HELLO_SCRIPT_BODY);
  fs.writeFileSync(path.join(sites.backend, 'item.json'), Buffer.alloc(KIB, 'x'));
  return {
    root,
    sites,
    certificate: openssl ? createCertificate(openssl, path.join(root, 'certificate')) : null,
    sizes: { html: files.html.length, js: files.js.length, bin: files.bin.length },
    dirEntries: DIR_ENTRIES,
  };
}

function removeFixtures(fixtures) {
  fs.rmSync(fixtures.root, { recursive: true, force: true });
}

module.exports = { createFixtures, removeFixtures };
