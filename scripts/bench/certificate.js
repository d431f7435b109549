'use strict';
// One self-signed certificate per benchmark run, made with openssl in the temp dir, used by svr
// and nginx alike so that the HTTPS rows compare the same handshake (ECDSA P-256: what certbot
// issues by default today).
const { spawnSync } = require('child_process');
const fs = require('fs');
const path = require('path');

function createCertificate(openssl, dir) {
  fs.mkdirSync(dir, { recursive: true });
  const cert = path.join(dir, 'cert.pem');
  const key = path.join(dir, 'key.pem');
  const result = spawnSync(openssl, [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', key, '-out', cert, '-days', '365', '-subj', '/CN=localhost',
    '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1',
  ], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`openssl req failed: ${(result.stderr || result.error || '').toString().trim().split('\n').pop()}`);
  return { cert, key, algorithm: 'ECDSA P-256' };
}

module.exports = { createCertificate };
