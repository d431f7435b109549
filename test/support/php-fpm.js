'use strict';
// Debian's PHP-FPM for the gateway tests: installed when missing (apt, as other tests install
// their packages), started by the test on a Unix socket (or a loopback port) in a directory of
// its own, stopped with its children when the test ends.
//
//   const fpm = await startPhpFpm({ maxChildren, listen: 'socket' | 'tcp', ini: { name: value } })
//     -> { skip } | { upstream ('unix:/...sock' or '127.0.0.1:PORT'), socket, dir, log(), stop() }
//   phpFpmCommand() -> { path } | { skip }: the php-fpmX.Y binary
//   readableByAll(dir): as root PHP-FPM runs its scripts as nobody, who must read the web root
//   (the test's temporary directories are 0700)

const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { makeTempDir, getFreePort, aptInstall, LineWatcher } = require('./helpers');

function findFpm() {
  const found = spawnSync('sh', ['-c', 'ls /usr/sbin/php-fpm* 2>/dev/null | sort | tail -1'], { encoding: 'utf8' }).stdout.trim();
  return found || null;
}

function phpFpmCommand() {
  let found = findFpm();
  if (found) return { path: found };
  if (process.getuid() !== 0) return { skip: 'php-fpm is not installed and installing it needs root' };
  const result = aptInstall('php-fpm');
  found = findFpm();
  return found ? { path: found } : { skip: `apt-get install php-fpm failed: ${(result.stderr || '').trim().split('\n').pop()}` };
}

async function startPhpFpm({ maxChildren = 4, listen = 'socket', ini = {} } = {}) {
  const command = phpFpmCommand();
  if (command.skip) return command;
  const dir = makeTempDir('svr-php-fpm-');
  const socket = path.join(dir, 'php-fpm.sock');
  const port = listen === 'tcp' ? await getFreePort() : null;
  const asRoot = process.getuid() === 0;
  const lines = [
    '[global]',
    `pid = ${path.join(dir, 'php-fpm.pid')}`,
    `error_log = ${path.join(dir, 'php-fpm.log')}`,
    'daemonize = no',
    'log_level = notice',
    '[www]',
    `listen = ${port ? `127.0.0.1:${port}` : socket}`,
    ...(asRoot ? ['user = nobody', 'group = nogroup', 'listen.owner = root', 'listen.mode = 0600'] : []),
    'pm = static',
    `pm.max_children = ${maxChildren}`,
    'catch_workers_output = yes',
    'clear_env = yes',
    'php_admin_value[log_errors] = On',
    'php_admin_value[display_errors] = Off',
    'php_admin_value[upload_max_filesize] = 16M',
    'php_admin_value[post_max_size] = 16M',
    `php_admin_value[upload_tmp_dir] = ${path.join(dir, 'tmp')}`,
    ...Object.entries(ini).map(([name, value]) => `php_admin_value[${name}] = ${value}`),
  ];
  fs.writeFileSync(path.join(dir, 'php-fpm.conf'), lines.join('\n') + '\n');
  fs.chmodSync(dir, 0o755);
  fs.mkdirSync(path.join(dir, 'tmp'), { mode: 0o1777 });
  fs.chmodSync(path.join(dir, 'tmp'), 0o1777);
  const child = spawn(command.path, ['--nodaemonize', '--force-stderr', '--fpm-config', path.join(dir, 'php-fpm.conf'), ...(asRoot ? ['--allow-to-run-as-root'] : [])], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const log = new LineWatcher(child.stderr);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGQUIT'); // graceful: the master ends its children
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    }
  };
  try {
    await log.waitFor(/ready to handle connections/, 0, 20000);
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    upstream: port ? `127.0.0.1:${port}` : `unix:${socket}`,
    socket,
    dir,
    pid: child.pid,
    log: () => log.lines,
    stop,
  };
}

function readableByAll(...dirs) {
  for (const dir of dirs) fs.chmodSync(dir, 0o755);
}

module.exports = { startPhpFpm, phpFpmCommand, readableByAll };
