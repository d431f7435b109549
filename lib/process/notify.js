'use strict';
// Readiness for systemd (Type=notify): the primary says READY=1 once every worker listens, so
// `systemctl start svr` returns then, and fails when svr exits before (port in use, bad config).
// Node cannot send a datagram on a Unix socket, so systemd's own `systemd-notify` sends it; the
// unit's NotifyAccess=all lets a child of the main process speak for it, and systemd-notify waits
// until the manager has read the message (it would otherwise exit before systemd can tell which
// service it belongs to). NOTIFY_SOCKET is taken out of the environment at start, so workers and
// user code never inherit it.

const { execFile } = require('node:child_process');

let notifySocket = null;

function takeNotifySocket(env = process.env) {
  notifySocket = env.NOTIFY_SOCKET || null;
  delete env.NOTIFY_SOCKET;
}

// Resolves once systemd has the message (or at once outside systemd); never rejects: a failed
// notification is logged, and systemd's start timeout reports it.
function notify(args, log) {
  if (!notifySocket) return Promise.resolve();
  return new Promise((resolve) => {
    execFile('systemd-notify', args, { env: { ...process.env, NOTIFY_SOCKET: notifySocket }, timeout: 10000 },
      (error, stdout, stderr) => {
        if (error) log.warn(`systemd-notify ${args.join(' ')} failed: ${(stderr || error.message).trim()}`);
        resolve();
      });
  });
}

const notifyReady = (status, log) => notify(['--ready', `--status=${status}`], log);
const notifyStatus = (status, log) => notify([`--status=${status}`], log);

module.exports = { takeNotifySocket, notifyReady, notifyStatus };
