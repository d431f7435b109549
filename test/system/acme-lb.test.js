'use strict';
// Three svr hosts behind HAProxy share acme/ of their state directories (as on a shared file system) and get
// one certificate from one order: the first to take the lock orders, the others wait and then
// serve what it obtained. Pebble (in a namespace of its own) resolves the names to the balancer,
// so its validations reach whichever host HAProxy picks, and that host answers from the shared
// directory. Real network stacks in network namespaces; everything is removed at the end.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { SVR, ensureDebianPackage, makeTempDir } = require('../support/helpers');
const { whyNotNamespaces, createNetwork } = require('../support/netns');
const { pebbleAvailable, startPebble } = require('../support/pebble');

const ADDRESS = { client: '10.78.0.10', lb: '10.78.0.2', ca: '10.78.0.30', s1: '10.78.0.11', s2: '10.78.0.12', s3: '10.78.0.13' };
const HOSTS = ['s1', 's2', 's3'];
const NAMES = ['a.lb.svr.test', 'b.lb.svr.test', 'c.lb.svr.test']; // three validations, round-robin over three hosts
const ID = `svracme${process.pid % 100000}`;

function haproxyConfig(dir) {
  const servers = (port) => HOSTS.map((host) => `  server ${host} ${ADDRESS[host]}:${port}`).join('\n');
  const text = `global
  log stdout format raw local0 notice
defaults
  mode tcp
  log global
  timeout connect 2s
  timeout client 30s
  timeout server 30s
frontend plain
  bind ${ADDRESS.lb}:80
  default_backend plain
frontend tls
  bind ${ADDRESS.lb}:443
  default_backend tls
backend plain
  balance roundrobin
${servers(80)}
backend tls
  balance roundrobin
${servers(443)}
`;
  const file = path.join(dir, 'haproxy.cfg');
  fs.writeFileSync(file, text);
  return file;
}

const skip = whyNotNamespaces(ID) || pebbleAvailable().skip || null;
const haproxy = skip ? null : ensureDebianPackage('haproxy');

test('three hosts sharing a state directory behind HAProxy get one certificate from one order', { skip: skip || haproxy.skip, timeout: 120000 }, async (t) => {
  const dir = makeTempDir('svr-acme-lb-');
  const network = createNetwork(ID, ADDRESS);
  t.after(() => network.close());
  const pebble = await startPebble({ httpPort: 80, tlsPort: 443, netns: network.ns.ca, address: ADDRESS.ca, answer: ADDRESS.lb });
  t.after(() => pebble.stop());
  network.runIn('lb', haproxy.path, ['-db', '-f', haproxyConfig(dir)]);
  // The shared file system: each host's own state directory has acme/ linked to it.
  const shared = path.join(dir, 'shared-acme');
  fs.mkdirSync(shared);
  const svr = {};
  // All three start at once and race for the lock.
  await Promise.all(HOSTS.map(async (host) => {
    const hostDir = path.join(dir, host);
    fs.mkdirSync(path.join(hostDir, 'web'), { recursive: true });
    fs.writeFileSync(path.join(hostDir, 'web', 'index.html'), `${host}\n`);
    fs.mkdirSync(path.join(hostDir, 'state'));
    fs.symlinkSync(shared, path.join(hostDir, 'state', 'acme'));
    const config = {
      port: 80, sport: 443, wwwroot: 'web', workers: 1, domain: NAMES[0], stateDirectory: 'state',
      acme: { directory: pebble.directory, email: 'ops@example.com', domains: NAMES, challenges: ['http-01'] },
    };
    fs.writeFileSync(path.join(hostDir, 'svr-config.json'), JSON.stringify(config));
    svr[host] = network.runIn(host, 'env', [`NODE_EXTRA_CA_CERTS=${pebble.caFile}`, process.execPath, SVR, '--config', path.join(hostDir, 'svr-config.json')]);
    await svr[host].waitFor(/listening on /);
  }));
  const serving = await Promise.all(HOSTS.map((host) => svr[host].waitFor(/ACME: serving the certificate for .*\(serial (\w+)/, 0, 60000)));
  const serials = new Set(serving.map((line) => /serial (\w+)/.exec(line)[1]));
  assert.equal(serials.size, 1, `one certificate on every host: ${serving.join(' | ')}`);
  assert.equal(pebble.orders(), 1, 'one order at the CA');
  const ordered = HOSTS.filter((host) => svr[host].lines.some((line) => /ACME: ordering a certificate/.test(line)));
  assert.equal(ordered.length, 1, `one host ordered: ${ordered}`);
  const waited = HOSTS.filter((host) => svr[host].lines.some((line) => /another process sharing the state directory obtained/.test(line)));
  assert.equal(waited.length, 2);
  // Pebble's validations went round-robin through HAProxy: every host answered some, including
  // the two that did not order.
  const answered = HOSTS.map((host) => svr[host].lines.filter((line) => /"GET \/\.well-known\/acme-challenge\/[\w-]+ HTTP\/1\.1" 200/.test(line)).length);
  t.diagnostic(`challenge answers per host: ${answered.join(', ')}; ordered on ${ordered[0]}`);
  assert.ok(answered.every((count) => count > 0), 'every host answered validations, the two that did not order too');
  // A client trusting only Pebble's root gets a valid chain for each name through the balancer.
  const script = `
    const https = require('https'); const tls = require('tls');
    https.get(${JSON.stringify(pebble.rootUrl)}, { ca: require('fs').readFileSync(${JSON.stringify(pebble.caFile)}) }, (r) => {
      let root = ''; r.on('data', (c) => { root += c; }); r.on('end', async () => {
        const out = [];
        for (const name of ${JSON.stringify(NAMES)}) {
          out.push(await new Promise((resolve) => { const s = tls.connect({ host: ${JSON.stringify(ADDRESS.lb)}, port: 443, servername: name, ca: root }, () => { resolve(name + ':' + s.authorized); s.end(); }); s.on('error', (e) => resolve(name + ':' + e.message)); }));
        }
        console.log(out.join(' '));
      });
    });`;
  const result = network.run('client', process.execPath, ['-e', script]);
  assert.equal(result.stdout.trim(), NAMES.map((name) => `${name}:true`).join(' '), result.stderr);
});
