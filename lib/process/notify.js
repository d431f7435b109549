'use strict';
// Readiness for systemd (Type=notify): the primary says READY=1 once every worker listens, so
// `systemctl start svr` returns then, and fails when svr exits before (port in use, bad config).
// Node cannot send a datagram on a Unix socket, so systemd's own `systemd-notify` sends it; the
// unit's NotifyAccess=all lets a child of the main process speak for it, and systemd-notify waits
// until the manager has read the message (it would otherwise exit before systemd can tell which
// service it belongs to). NOTIFY_SOCKET is taken out of the environment at start, so workers and
// user code never inherit it.

const { spawn } = require('node:child_process');

let notifySocket = null;

function takeNotifySocket(env = process.env) {
  notifySocket = env.NOTIFY_SOCKET || null;
  delete env.NOTIFY_SOCKET;
}

// Resolves once systemd has the message (or at once outside systemd); never rejects: a failed
// notification is logged, and systemd's start timeout reports it. fd: a descriptor of this process
// systemd-notify passes on as its descriptor 3 (for the file descriptor store, fd-store.js).
function notify(args, log, fd) {
  if (!notifySocket) return Promise.resolve();
  return new Promise((resolve) => {
    const stdio = ['ignore', 'ignore', 'pipe', ...(fd === undefined ? [] : [fd])];
    let child;
    try {
      child = spawn('systemd-notify', args, { env: { ...process.env, NOTIFY_SOCKET: notifySocket }, stdio, timeout: 10000 });
    } catch (error) {
      log.warn(`systemd-notify ${args.join(' ')} failed: ${error.message}`);
      return resolve();
    }
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d) => { stderr += d; });
    child.on('error', (error) => { stderr ||= error.message; });
    child.on('close', (code, signal) => {
      if (code !== 0) log.warn(`systemd-notify ${args.join(' ')} failed: ${stderr.trim() || (signal ? `signal ${signal}` : `exit code ${code}`)}`);
      resolve();
    });
  });
}

const notifyReady = (status, log) => notify(['--ready', `--status=${status}`], log);
const notifyStatus = (status, log) => notify([`--status=${status}`], log);
// Into the file descriptor store, under a name (systemd 254 or later: systemd-notify --fd).
const notifyWithFd = (fd, name, log) => notify(['--fd=3', `--fdname=${name}`, 'FDSTORE=1'], log, fd);
const notifyFields = (fields, log) => notify(fields, log);

module.exports = { takeNotifySocket, notifyReady, notifyStatus, notifyWithFd, notifyFields };
