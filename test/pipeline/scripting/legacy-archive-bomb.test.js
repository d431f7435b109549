'use strict';
// A legacy .tar.gz mod that decompresses to far more than it holds (zeros after the end of the
// tar: a few KB on disk) is refused with "the archive expands to more than N bytes" after about a
// second of CPU, instead of the extractor's own gunzip taking minutes and hundreds of MB; one
// with moderate padding is simply extracted. The bounds are on this process's CPU time, not on the
// clock: the suite shares the machine, and a loaded one stretched 2 s of work past 10 s.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const zlib = require('node:zlib');
const { makeTempDir, writeFiles, getFreePort, runSvr } = require('../../support/helpers');
const { extractModArchive, MAX_EXPANDED_BYTES } = require('../../../lib/pipeline/scripting/legacy-archive');

// A tar with one index.js, then `paddingBytes` of zeros, in one gzip stream (compressed as it is
// produced, so the test never holds the padding).
// Runs fn() (the extraction is synchronous): { cpuMs: this process's CPU time in it, error }.
function measure(fn) {
  const before = process.cpuUsage();
  let error = null;
  try {
    fn();
  } catch (thrown) {
    error = thrown;
  }
  const used = process.cpuUsage(before);
  return { cpuMs: Math.round((used.user + used.system) / 1000), error };
}

async function paddedArchive(paddingBytes) {
  const source = Buffer.from('function Mod() {}\nMod.prototype.callback = function () {};\nmodule.exports = Mod;\n');
  const header = Buffer.alloc(512);
  header.write('index.js', 0);
  header.write('0000644\0', 100);
  header.write('0000000\0', 108);
  header.write('0000000\0', 116);
  header.write(`${source.length.toString(8).padStart(11, '0')}\0`, 124);
  header.write('00000000000\0', 136);
  header.write('        ', 148);
  header.write('0', 156);
  header.write('ustar\0' + '00', 257);
  let sum = 0;
  for (const byte of header) sum += byte;
  header.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148);
  const body = Buffer.alloc(Math.ceil(source.length / 512) * 512);
  source.copy(body);
  const gzip = zlib.createGzip({ level: 9 });
  const chunks = [];
  gzip.on('data', (chunk) => chunks.push(chunk));
  const ended = new Promise((resolve, reject) => { gzip.on('end', resolve); gzip.on('error', reject); });
  gzip.write(Buffer.concat([header, body, Buffer.alloc(1024)]));
  const zeros = Buffer.alloc(1024 * 1024);
  for (let left = paddingBytes; left > 0; left -= zeros.length) {
    if (!gzip.write(left >= zeros.length ? zeros : zeros.subarray(0, left))) await new Promise((resolve) => gzip.once('drain', resolve));
  }
  gzip.end();
  await ended;
  return Buffer.concat(chunks);
}

test('an archive that expands past the limit is refused at once; moderate padding is extracted', { timeout: 60000 }, async () => {
  const dir = makeTempDir();
  const bomb = path.join(dir, 'bomb.tar.gz');
  fs.writeFileSync(bomb, await paddedArchive(MAX_EXPANDED_BYTES + 16 * 1024 * 1024));
  assert.ok(fs.statSync(bomb).size < 1024 * 1024, 'a small file');
  const refused = measure(() => extractModArchive(bomb, path.join(dir, 'out1')));
  assert.match(String(refused.error?.message), new RegExp(`the archive expands to more than ${MAX_EXPANDED_BYTES} bytes`));
  assert.ok(refused.cpuMs < 10000, `refused after ${refused.cpuMs} ms of CPU`);
  assert.equal(fs.existsSync(path.join(dir, 'out1', 'index.js')), false, 'nothing extracted');

  const padded = path.join(dir, 'padded.tar.gz');
  fs.writeFileSync(padded, await paddedArchive(50 * 1024 * 1024));
  const extracted = measure(() => extractModArchive(padded, path.join(dir, 'out2')));
  assert.equal(extracted.error, null);
  assert.ok(extracted.cpuMs < 10000, `extracted after ${extracted.cpuMs} ms of CPU`);
  assert.ok(fs.existsSync(path.join(dir, 'out2', 'index.js')));
  // the limit is on the decompressed bytes, passed like the other limits
  assert.throws(() => extractModArchive(padded, path.join(dir, 'out3'), { expandedBytes: 1024 * 1024 }), /the archive expands to more than 1048576 bytes/);
});

test('svr --check names the archive and says it is too large, not that a mod hangs', { timeout: 60000 }, async () => {
  const dir = makeTempDir();
  writeFiles(dir, { 'web/index.html': 'x', 'mods/bomb.tar.gz': await paddedArchive(MAX_EXPANDED_BYTES + 16 * 1024 * 1024) });
  fs.writeFileSync(path.join(dir, 'svr-config.json'), JSON.stringify({ port: await getFreePort(), wwwroot: 'web', modsDirectory: 'mods', stateDirectory: 'state' }));
  const result = await runSvr(['--check', '--config', path.join(dir, 'svr-config.json')]);
  assert.equal(result.code, 1, result.stderr);
  assert.match(result.stderr, /bomb\.tar\.gz: cannot load the mod: the archive expands to more than \d+ bytes/);
  assert.doesNotMatch(result.stderr, /hangs/);
});
