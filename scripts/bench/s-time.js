'use strict';
// New TLS connections per second with full handshakes: `openssl s_time -new` opens a connection,
// does a full TLS handshake (it never resumes a session with -new), sends "GET <path> HTTP/1.0",
// reads the whole answer and closes, one connection after the other. `connections` such clients
// run side by side; the rate is the connections they completed over the wall-clock time.
// (wrk with "Connection: close" is no good for this: it resumes the TLS session on reconnect.)
const { spawn } = require('child_process');

function sTimeArgs({ url, seconds }) {
  const { hostname, port, pathname, search } = new URL(url);
  return ['s_time', '-connect', `${hostname}:${port}`, '-new', '-tls1_3', '-www', pathname + search, '-time', String(Math.max(1, Math.ceil(seconds)))];
}

// "371 connections in 3 real seconds, 1258 bytes read per connection" -> { connections, bytesPerConnection }
function parseSTime(stdout) {
  const match = stdout.match(/(\d+) connections in [\d.]+ real seconds, (\d+) bytes read per connection/);
  if (!match) return null;
  return { connections: Number(match[1]), bytesPerConnection: Number(match[2]) };
}

function runOneClient(openssl, args) {
  return new Promise((resolve) => {
    const proc = spawn(openssl, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (chunk) => (stdout += chunk));
    proc.stderr.on('data', (chunk) => (stderr += chunk));
    proc.on('error', (err) => resolve({ failure: `openssl s_time did not run: ${err.message}` }));
    proc.on('close', (code) => {
      const report = parseSTime(stdout);
      resolve(report ? { ...report, exitCode: code } : { failure: `openssl s_time exited ${code}: ${(stderr || stdout).trim().split('\n').slice(-1)[0]}` });
    });
  });
}

// Sums the clients into the figures wrk.js gives (no latency percentiles: s_time has none).
function combineClients(clients, wallSeconds, expectedBytes) {
  const failed = clients.filter((client) => client.failure);
  if (failed.length === clients.length) return { failure: failed[0].failure };
  const measured = clients.filter((client) => !client.failure);
  const requests = measured.reduce((sum, client) => sum + client.connections, 0);
  const shortAnswers = expectedBytes ? measured.filter((client) => client.bytesPerConnection < expectedBytes).length : 0;
  const meanMs = requests ? (wallSeconds * 1000 * measured.length) / requests : null;
  return {
    requests,
    rps: wallSeconds > 0 ? requests / wallSeconds : 0,
    bytesPerSecond: wallSeconds > 0 ? measured.reduce((sum, client) => sum + client.connections * client.bytesPerConnection, 0) / wallSeconds : 0,
    latencyMs: { mean: meanMs, p50: null, p90: null, p99: null, max: null },
    errors: failed.length + shortAnswers,
    errorDetail: { failedClients: failed.length, clientsWithShortAnswers: shortAnswers },
  };
}

async function runSTime({ openssl, url, seconds, connections, expectedBytes }) {
  const args = sTimeArgs({ url, seconds });
  const started = process.hrtime.bigint();
  const clients = await Promise.all(Array.from({ length: connections }, () => runOneClient(openssl, args)));
  const wallSeconds = Number(process.hrtime.bigint() - started) / 1e9;
  return combineClients(clients, wallSeconds, expectedBytes);
}

module.exports = { runSTime, parseSTime, combineClients, sTimeArgs };
