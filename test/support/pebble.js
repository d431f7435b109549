'use strict';
// Let's Encrypt's test CA for the ACME tests: Debian's `pebble` package (pebble and
// pebble-challtestsrv), installed through aptInstall when missing. Each startPebble() runs its own
// pair on free ports: pebble-challtestsrv as the DNS server answering 127.0.0.1 for every name,
// and Pebble validating HTTP-01 and TLS-ALPN-01 on the ports given (svr's port and sport).
//
//   startPebble({ httpPort, tlsPort, env, validityPeriod, netns, address, answer, eabKeys }) ->
//     { directory, caFile (trust for Pebble's own HTTPS), root() (Pebble's issuing root, PEM),
//       lines (Pebble's log), orders() (orders it created, from its log), stop() }
//   netns: run both inside this network namespace, listening on `address` (fixed ports there), with
//   the DNS server answering `answer` for every name (default 127.0.0.1).
//   eabKeys: { kid: base64url HMAC key }: Pebble then requires external account binding.

const { spawn } = require('node:child_process');
const fs = require('node:fs');
const https = require('node:https');
const path = require('node:path');
const { LineWatcher, ensureDebianPackage, getFreePort, makeTempDir } = require('./helpers');
const { generateSelfSigned } = require('../../lib/net/certificate');
const { testKeyPem } = require('./test-keys');

function pebbleAvailable() {
  for (const command of ['pebble', 'pebble-challtestsrv']) {
    const found = ensureDebianPackage(command, 'pebble');
    if (found.skip) return found;
  }
  return {};
}

function spawnLogged(command, args, env, netns) {
  const [file, argv] = netns ? ['ip', ['netns', 'exec', netns, command, ...args]] : [command, args];
  const child = spawn(file, argv, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines = new LineWatcher(child.stdout);
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk) => { for (const line of chunk.split('\n')) if (line) lines.add(line); });
  return { child, lines };
}

async function startPebble({ httpPort, tlsPort, env = {}, validityPeriod = 0, netns = null, address = '127.0.0.1', answer = '127.0.0.1', eabKeys = null }) {
  const dir = makeTempDir('svr-pebble-');
  const names = [{ type: 'dns', value: 'localhost' }, { type: 'ip', value: '127.0.0.1' }];
  if (address !== '127.0.0.1') names.push({ type: 'ip', value: address });
  const { certPem, keyPem } = generateSelfSigned({ names, keyPem: testKeyPem('pebble') }); // 2048 bits: Node 24 refuses less
  const caFile = path.join(dir, 'pebble-https.pem');
  fs.writeFileSync(caFile, certPem);
  fs.writeFileSync(path.join(dir, 'pebble-https.key'), keyPem);
  const [acmePort, managementPort, dnsPort, dnsManagementPort] = netns ? [14000, 15000, 8053, 8055]
    : [await getFreePort(), await getFreePort(), await getFreePort(), await getFreePort()];
  const config = {
    pebble: {
      listenAddress: `${address}:${acmePort}`,
      managementListenAddress: `${address}:${managementPort}`,
      certificate: caFile,
      privateKey: path.join(dir, 'pebble-https.key'),
      httpPort,
      tlsPort,
      ocspResponderURL: '',
      externalAccountBindingRequired: false,
    },
  };
  if (validityPeriod) config.pebble.certificateValidityPeriod = validityPeriod;
  if (eabKeys) Object.assign(config.pebble, { externalAccountBindingRequired: true, externalAccountMACKeys: eabKeys });
  fs.writeFileSync(path.join(dir, 'pebble.json'), JSON.stringify(config));
  const dns = spawnLogged('pebble-challtestsrv', [
    '-dns01', `127.0.0.1:${dnsPort}`, '-http01', '', '-https01', '', '-tlsalpn01', '',
    '-management', `127.0.0.1:${dnsManagementPort}`, '-defaultIPv4', answer, '-defaultIPv6', '',
  ], {}, netns);
  const pebble = spawnLogged('pebble', ['-config', path.join(dir, 'pebble.json'), '-dnsserver', `127.0.0.1:${dnsPort}`, '-strict=false'],
    { PEBBLE_VA_NOSLEEP: '1', PEBBLE_AUTHZREUSE: '0', ...env }, netns);
  // Also at the test process's exit; a stopped Pebble's listener goes (a file starts a dozen).
  const stop = () => {
    process.off('exit', stop);
    for (const { child } of [pebble, dns]) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  process.on('exit', stop);
  try {
    await dns.lines.waitFor(/Creating TCP and UDP DNS-01 challenge server|DNS-01 challenge server/, 0, 20000);
    await pebble.lines.waitFor(/Listening on: [\d.]+:\d+/, 0, 20000);
  } catch (error) {
    stop();
    throw new Error(`Pebble did not start: ${error.message}\n${[...dns.lines.lines, ...pebble.lines.lines].join('\n')}`);
  }
  return {
    directory: `https://${address}:${acmePort}/dir`,
    rootUrl: `https://${address}:${managementPort}/roots/0`,
    caFile,
    lines: pebble.lines,
    orders: () => pebble.lines.lines.filter((line) => /Added order "[^"]+" to the db/.test(line)).length,
    root: () => get(`https://127.0.0.1:${managementPort}/roots/0`, certPem),
    stop,
  };
}

function get(url, ca) {
  return new Promise((resolve, reject) => {
    https.get(url, { ca }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => { body += chunk; });
      res.on('end', () => (res.statusCode === 200 ? resolve(body) : reject(new Error(`${url}: ${res.statusCode}`))));
    }).on('error', reject);
  });
}

module.exports = { pebbleAvailable, startPebble };
