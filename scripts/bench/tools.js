'use strict';
// Finds (or installs) the load generator and the peer servers the benchmark needs:
// wrk, nginx, h2load (nghttp2-client), openssl and ab (apache2-utils) from Debian packages, serve,
// http-server and pm2 from devDependencies.
const { spawnSync } = require('child_process');
const fs = require('fs');
const path = require('path');

const ROOT = path.resolve(__dirname, '..', '..');
const SYSTEM_DIRS = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];

function findExecutable(name) {
  const dirs = (process.env.PATH || '').split(':').concat(SYSTEM_DIRS);
  for (const dir of dirs) {
    const candidate = path.join(dir, name);
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      return candidate;
    } catch {
      // not in this directory
    }
  }
  return null;
}

function run(command, args, log) {
  log(`$ ${command} ${args.join(' ')}`);
  const result = spawnSync(command, args, { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  if (result.status !== 0) log(String(result.stderr || result.error || '').trim().split('\n').slice(-3).join('\n'));
  return result.status === 0;
}

function aptInstall(packages, log) {
  if (typeof process.getuid === 'function' && process.getuid() !== 0) {
    log(`not root: install ${packages.join(' ')} yourself (apt-get install ${packages.join(' ')})`);
    return false;
  }
  // Wait for a dpkg lock held by another apt-get (shared machine) instead of failing at once.
  const install = ['-o', 'DPkg::Lock::Timeout=120', 'install', '-y', ...packages];
  if (run('apt-get', install, log)) return true;
  return run('apt-get', ['update'], log) && run('apt-get', install, log);
}

// Debian package per executable.
const DEBIAN_PACKAGES = { wrk: 'wrk', nginx: 'nginx', h2load: 'nghttp2-client', openssl: 'openssl', ab: 'apache2-utils' };

function ensureDebianTools(names, { install, log }) {
  const missing = names.filter((name) => !findExecutable(name));
  if (missing.length && install) aptInstall(missing.map((name) => DEBIAN_PACKAGES[name]), log);
  const found = {};
  for (const name of names) found[name] = findExecutable(name);
  return found;
}

// The JavaScript entry point of an npm package's command, so it can be run with `node` directly
// (the spawned process is then the server itself, not an npx wrapper).
function packageBin(pkg, command) {
  try {
    const manifestPath = require.resolve(`${pkg}/package.json`, { paths: [ROOT] });
    const manifest = JSON.parse(fs.readFileSync(manifestPath, 'utf8'));
    const bin = typeof manifest.bin === 'string' ? manifest.bin : manifest.bin[command];
    return { path: path.join(path.dirname(manifestPath), bin), version: manifest.version };
  } catch {
    return null;
  }
}

function ensureNodePeers({ install, log }) {
  const wanted = { serve: ['serve', 'serve'], 'http-server': ['http-server', 'http-server'], pm2: ['pm2', 'pm2-runtime'] };
  const lookup = () => Object.fromEntries(Object.entries(wanted).map(([name, [pkg, cmd]]) => [name, packageBin(pkg, cmd)]));
  let found = lookup();
  if (Object.values(found).some((bin) => !bin) && install) {
    run('npm', ['install', '--no-audit', '--no-fund'], log); // devDependencies, as pinned in package-lock.json
    found = lookup();
  }
  return found;
}

function versionOf(executable, args) {
  if (!executable) return null;
  const result = spawnSync(executable, args, { encoding: 'utf8' });
  const text = `${result.stdout || ''}${result.stderr || ''}`;
  const match = text.match(/\d+\.\d+(\.\d+)?/);
  return match ? match[0] : null;
}

function ensureTools(options, log) {
  const debian = ensureDebianTools(['wrk', 'nginx', 'h2load', 'openssl', 'ab'], { install: options.install, log });
  const peers = ensureNodePeers({ install: options.install, log });
  return {
    wrk: debian.wrk,
    nginx: debian.nginx,
    h2load: debian.h2load,
    openssl: debian.openssl,
    taskset: findExecutable('taskset'), // util-linux, on every Debian
    ab: debian.ab,
    pm2Runtime: peers.pm2 ? peers.pm2.path : null,
    serve: peers.serve,
    httpServer: peers['http-server'],
    versions: {
      node: process.versions.node,
      wrk: versionOf(debian.wrk, ['-v']),
      nginx: versionOf(debian.nginx, ['-v']),
      h2load: versionOf(debian.h2load, ['--version']),
      openssl: versionOf(debian.openssl, ['version']),
      ab: versionOf(debian.ab, ['-V']),
      pm2: peers.pm2 && peers.pm2.version,
      serve: peers.serve && peers.serve.version,
      'http-server': peers['http-server'] && peers['http-server'].version,
    },
  };
}

module.exports = { ensureTools, ROOT };
