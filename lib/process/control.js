'use strict';
// The primary's control socket, and the client `svr reload` / `svr reopen-logs` use to talk to it.
// A signal cannot answer: `kill -HUP` succeeds whether or not svr accepts the new config. Over a
// Unix stream socket the command waits for the outcome, prints it and exits 0 or 1, so
// `systemctl reload svr` (ExecReload= runs `svr reload`) fails when svr refuses the config.
//
// Protocol: the client sends one line naming a command; the primary answers one JSON line
// {"ok": true|false, "message": "..."} and closes. The socket is made with the process umask
// (0077 under the unit): only svr's own user, and root, can connect.

const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');

const SOCKET_NAME = 'control.sock';
// Where systemd/svr.service's RuntimeDirectory=svr puts it: `sudo svr reload` finds it there.
const SERVICE_SOCKET = path.join('/run/svr', SOCKET_NAME);
const COMMANDS = new Set(['reload', 'reopen-logs']);
const MAX_REQUEST_BYTES = 256;
const CLIENT_TIMEOUT_MS = 5 * 60 * 1000; // longer than any reload: each new worker has 30 s to listen

// The primary's socket: --control-socket, else $RUNTIME_DIRECTORY (systemd's RuntimeDirectory=,
// first entry), else none (signals still work).
function serverSocketPath(option, env = process.env) {
  if (option) return path.resolve(option);
  if (env.RUNTIME_DIRECTORY) return path.join(env.RUNTIME_DIRECTORY.split(':')[0], SOCKET_NAME);
  return null;
}

// The client's: the same, else the service's.
function clientSocketPath(option, env = process.env) {
  return serverSocketPath(option, env) ?? SERVICE_SOCKET;
}

// handlers: { reload: () => Promise<{ok, message}>, 'reopen-logs': ... }. Resolves with the server
// once it listens; rejects when another primary already answers on that path.
async function startControlServer(socketPath, handlers, log) {
  await removeStaleSocket(socketPath);
  const server = net.createServer((socket) => serve(socket, handlers, log));
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => { server.off('error', reject); resolve(); });
  });
  server.on('error', (error) => log.error(`control socket ${socketPath}: ${error.message}`));
  server.unref(); // never what keeps the primary alive
  process.once('exit', () => { try { fs.unlinkSync(socketPath); } catch {} });
  return server;
}

function serve(socket, handlers, log) {
  let request = '';
  socket.setEncoding('utf8');
  socket.on('error', () => {}); // a client that went away has nothing left to be told
  socket.on('data', async (chunk) => {
    request += chunk;
    const end = request.indexOf('\n');
    if (end < 0 && request.length <= MAX_REQUEST_BYTES) return;
    socket.removeAllListeners('data');
    const command = (end < 0 ? request : request.slice(0, end)).trim();
    const handler = COMMANDS.has(command) ? handlers[command] : null;
    let outcome;
    if (!handler) {
      outcome = { ok: false, message: `unknown command "${command.slice(0, 40)}"` };
    } else {
      log.info(`control socket: ${command}`);
      try {
        outcome = await handler();
      } catch (error) {
        outcome = { ok: false, message: error.message };
      }
    }
    socket.end(`${JSON.stringify(outcome)}\n`);
  });
}

// A socket file left by a primary that was killed is removed; one a live primary answers on is not.
async function removeStaleSocket(socketPath) {
  let stat;
  try { stat = fs.lstatSync(socketPath); } catch { return; }
  if (!stat.isSocket()) throw new Error(`control socket ${socketPath}: exists and is not a socket`);
  const live = await new Promise((resolve) => {
    const probe = net.connect(socketPath, () => { probe.destroy(); resolve(true); });
    probe.on('error', () => resolve(false));
  });
  if (live) throw new Error(`control socket ${socketPath}: another svr is running and answers there`);
  fs.unlinkSync(socketPath);
}

// Sends one command; resolves {ok, message}. Never rejects: a failure to connect is an outcome too.
function sendControlCommand(socketPath, command, { timeoutMs = CLIENT_TIMEOUT_MS } = {}) {
  return new Promise((resolve) => {
    let answer = '';
    let settled = false;
    const finish = (outcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(outcome);
    };
    const socket = net.connect(socketPath, () => socket.write(`${command}\n`));
    const timer = setTimeout(() => finish({ ok: false, message: `no answer from ${socketPath} within ${timeoutMs} ms` }), timeoutMs);
    socket.setEncoding('utf8');
    socket.on('data', (chunk) => { answer += chunk; });
    socket.on('end', () => finish(parseAnswer(answer, socketPath)));
    socket.on('error', (error) => finish({ ok: false, message: describeConnectError(error, socketPath) }));
  });
}

function parseAnswer(text, socketPath) {
  try {
    const outcome = JSON.parse(text);
    if (typeof outcome.ok === 'boolean' && typeof outcome.message === 'string') return outcome;
  } catch {}
  return { ok: false, message: `unexpected answer from ${socketPath}: ${JSON.stringify(text.slice(0, 200))}` };
}

function describeConnectError(error, socketPath) {
  switch (error.code) {
    case 'ENOENT':
    case 'ECONNREFUSED':
      return `svr is not running, or not with a control socket at ${socketPath} ` +
        '(under systemd: systemctl status svr; elsewhere: give the primary and this command the same --control-socket)';
    case 'EACCES':
      return `permission denied on ${socketPath}: only root and the user svr runs as may ask it (sudo svr ...)`;
    default:
      return `cannot reach svr at ${socketPath}: ${error.message}`;
  }
}

module.exports = { serverSocketPath, clientSocketPath, startControlServer, sendControlCommand, COMMANDS };
