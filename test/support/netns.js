'use strict';
// Hosts as network namespaces on one bridge, for tests of several machines on real network
// stacks. Traffic stays inside the namespaces made here; removeNetwork() and killAll() undo
// everything (call them from t.after).
//
//   const net = createNetwork(prefix, { host: '10.x.y.z', ... })
//   net.whyNot()              one-line reason the kernel or user cannot, or null
//   net.build() / net.remove()
//   net.run(host, command, args, { env }) -> { child, lines, exited, waitFor(pattern, since, ms) }
//   net.killAll()             SIGKILL to every process group started with run()

const { spawn, spawnSync } = require('node:child_process');

function ip(args) {
  const result = spawnSync('ip', args, { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`ip ${args.join(' ')}: ${(result.stderr || '').trim()}`);
}

function createNetwork(prefix, addresses) {
  const ns = (host) => `${prefix}${host}`;
  const hub = `${prefix}hub`;
  const started = new Set();
  return {
    ns,
    whyNot() {
      if (process.platform !== 'linux') return 'network namespaces are Linux only';
      if (process.getuid() !== 0) return 'network namespaces need root';
      const probe = `${prefix}probe`;
      const result = spawnSync('ip', ['netns', 'add', probe], { encoding: 'utf8' });
      if (result.status !== 0) return `the kernel refuses network namespaces here: ${(result.stderr || result.error || '').toString().trim()}`;
      spawnSync('ip', ['netns', 'del', probe]);
      return null;
    },
    build() {
      ip(['netns', 'add', hub]);
      ip(['-n', hub, 'link', 'add', 'br0', 'type', 'bridge']);
      ip(['-n', hub, 'link', 'set', 'br0', 'up']);
      for (const [host, address] of Object.entries(addresses)) {
        ip(['netns', 'add', ns(host)]);
        ip(['-n', hub, 'link', 'add', `v${host}`, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns(host)]);
        ip(['-n', hub, 'link', 'set', `v${host}`, 'master', 'br0', 'up']);
        ip(['-n', ns(host), 'addr', 'add', `${address}/24`, 'dev', 'eth0']);
        ip(['-n', ns(host), 'link', 'set', 'eth0', 'up']);
        ip(['-n', ns(host), 'link', 'set', 'lo', 'up']);
      }
    },
    remove() {
      for (const name of [hub, ...Object.keys(addresses).map(ns)]) spawnSync('ip', ['netns', 'del', name]);
    },
    run(host, command, args, { env = {} } = {}) {
      const child = spawn('ip', ['netns', 'exec', ns(host), command, ...args], { stdio: ['ignore', 'pipe', 'pipe'], detached: true, env: { ...process.env, ...env } });
      started.add(child);
      child.once('exit', () => started.delete(child));
      const lines = [];
      const waiters = [];
      const add = (line) => {
        lines.push(line);
        for (const waiter of [...waiters]) if (waiter.pattern.test(line)) { waiters.splice(waiters.indexOf(waiter), 1); waiter.resolve(line); }
      };
      for (const stream of [child.stdout, child.stderr]) {
        let partial = '';
        stream.setEncoding('utf8');
        stream.on('data', (chunk) => {
          const parts = (partial + chunk).split('\n');
          partial = parts.pop();
          parts.forEach(add);
        });
      }
      const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
      return {
        child, lines, exited,
        waitFor(pattern, since = 0, timeoutMs = 20000) {
          const seen = lines.slice(since).find((line) => pattern.test(line));
          if (seen) return Promise.resolve(seen);
          return new Promise((resolve, reject) => {
            const waiter = { pattern, resolve: (line) => { clearTimeout(timer); resolve(line); } };
            const timer = setTimeout(() => {
              waiters.splice(waiters.indexOf(waiter), 1);
              reject(new Error(`${host}: timed out waiting for ${pattern}; output:\n${lines.slice(-30).join('\n')}`));
            }, timeoutMs);
            waiters.push(waiter);
          });
        },
      };
    },
    // A short node script in a namespace, to completion: { status, stdout, stderr }.
    node(host, script, timeout = 20000) {
      return spawnSync('ip', ['netns', 'exec', ns(host), process.execPath, '-e', script], { encoding: 'utf8', timeout });
    },
    killAll() {
      for (const child of started) {
        try { process.kill(-child.pid, 'SIGKILL'); } catch { /* already gone */ }
      }
    },
  };
}

module.exports = { createNetwork };
