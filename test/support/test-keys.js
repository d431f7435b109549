'use strict';
// The RSA keys the tests' certificates are signed with: 2048 bits (Node 24's OpenSSL refuses a
// smaller key in a TLS server, "ee key too small", and so does curl's at security level 2), each
// made once per `npm test` run and shared by the test files through SVR_TEST_KEYS_DIR (set by
// scripts/test.js), or once per process when a file runs alone. A key costs ~85 ms of CPU; a
// certificate signed with a key already made ~3 ms.
//
// testKeyPem(label): certificates made with different labels have different keys, which the
// tests of a mismatched certificate and key need; the same label gives the same key.

const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

const made = new Map();

function testKeyPem(label = 'default') {
  if (!/^[\w.-]+$/.test(label)) throw new Error(`testKeyPem: a label of letters, digits, . - _: ${label}`);
  if (!made.has(label)) made.set(label, sharedKey(label));
  return made.get(label);
}

function newKeyPem() {
  return crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' });
}

// Another test file of the run may write the same label at the same time: each writes whole
// (a rename), and each process keeps the one it read first.
function sharedKey(label) {
  const dir = process.env.SVR_TEST_KEYS_DIR;
  if (!dir) return newKeyPem();
  const file = path.join(dir, `${label}.pem`);
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    const pem = newKeyPem();
    const tmp = `${file}.${process.pid}`;
    fs.writeFileSync(tmp, pem, { mode: 0o600 });
    fs.renameSync(tmp, file);
    return pem;
  }
}

module.exports = { testKeyPem };
