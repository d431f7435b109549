'use strict';
// Network namespaces as hosts on one bridge, for tests that need several machines: a process
// runs "on" a host with `ip netns exec`, in its own process group, with its output lines kept
// and waitable. Everything made is removed by close() (namespaces, and every process started,
// killed by its group).
//
//   whyNotNamespaces(id) -> null | one-line reason to skip
//   const net = createNetwork(id, { host: '10.x.y.z', ... })   builds the bridge and the hosts
//   net.runIn(host, command, args, { stdin }) -> { child, lines, exited, waitFor(pattern, since, ms) }
//   net.run(host, command, args)   -> spawnSync's result, inside the host
//   net.waitForPort(host, address, port)   from `host`, until a TCP connection succeeds
//   net.close()

const { spawn, spawnSync } = require('node:child_process');

function ip(args) {
  const result = spawnSync('ip', args, { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`ip ${args.join(' ')}: ${(result.stderr || '').trim()}`);
}

function whyNotNamespaces(id) {
  if (process.platform !== 'linux') return 'network namespaces are Linux only';
  if (process.getuid() !== 0) return 'network namespaces need root';
  const probe = `${id}probe`;
  const result = spawnSync('ip', ['netns', 'add', probe], { encoding: 'utf8' });
  if (result.status !== 0) return `the kernel refuses network namespaces here: ${(result.stderr || result.error || '').toString().trim()}`;
  spawnSync('ip', ['netns', 'del', probe]);
  return null;
}

function createNetwork(id, addresses) {
  const ns = { hub: `${id}hub` };
  for (const host of Object.keys(addresses)) ns[host] = `${id}${host}`;
  const started = new Set();
  ip(['netns', 'add', ns.hub]);
  ip(['-n', ns.hub, 'link', 'add', 'br0', 'type', 'bridge']);
  ip(['-n', ns.hub, 'link', 'set', 'br0', 'up']);
  for (const [host, address] of Object.entries(addresses)) {
    ip(['netns', 'add', ns[host]]);
    ip(['-n', ns.hub, 'link', 'add', `v${host}`, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns[host]]);
    ip(['-n', ns.hub, 'link', 'set', `v${host}`, 'master', 'br0', 'up']);
    ip(['-n', ns[host], 'addr', 'add', `${address}/24`, 'dev', 'eth0']);
    ip(['-n', ns[host], 'link', 'set', 'eth0', 'up']);
    ip(['-n', ns[host], 'link', 'set', 'lo', 'up']);
  }

  function runIn(host, command, args, { stdin = 'ignore' } = {}) {
    const child = spawn('ip', ['netns', 'exec', ns[host], command, ...args], { stdio: [stdin, 'pipe', 'pipe'], detached: true });
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
  }

  function run(host, command, args, options = {}) {
    return spawnSync('ip', ['netns', 'exec', ns[host], command, ...args], { encoding: 'utf8', timeout: 20000, ...options });
  }

  function waitForPort(host, address, port) {
    const script = `const net = require('net'); let n = 0; (function again() { const s = net.connect(${port}, '${address}'); s.on('connect', () => { s.destroy(); process.exit(0); }); s.on('error', () => { if (++n >= 200) process.exit(1); setTimeout(again, 50); }); })();`;
    const result = run(host, process.execPath, ['-e', script]);
    if (result.status !== 0) throw new Error(`${address}:${port} is not reachable from ${host}`);
  }

  function close() {
    for (const child of started) {
      try { process.kill(-child.pid, 'SIGKILL'); } catch { /* already gone */ }
    }
    for (const name of Object.values(ns)) spawnSync('ip', ['netns', 'del', name]);
  }

  return { ns, runIn, run, waitForPort, close };
}

module.exports = { whyNotNamespaces, createNetwork };
