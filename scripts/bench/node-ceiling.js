#!/usr/bin/env node
'use strict';
// The node ceiling: what Node's HTTP stack allows on this machine for a static file. A `cluster`
// of N workers that read every file at the top of --root into memory at start and answer
// GET /<name> from memory with the response headers svr sends for a static file (Server, Vary,
// Content-Type, Last-Modified, Accept-Ranges, X-Content-Type-Options, ETag, Content-Length, Date),
// 304 for a matching If-None-Match, and nothing else: no logging, no stat, no routing, no
// compression. svr/node-ceiling is then what svr's pipeline costs over the bare minimum.
// Same scheduling policy as svr's default (SCHED_NONE: workers accept) unless NODE_CLUSTER_SCHED_POLICY is set.
// With --proxy URL it is the ceiling of a reverse proxy instead: every request is forwarded to
// URL's host (path and method kept, keep-alive connections to it) and the answer piped back.
// With --cert and --key it is the ceiling of HTTPS and HTTP/2: http2.createSecureServer({
// allowHTTP1: true }) (HTTP/2 by ALPN, HTTP/1.1 otherwise), TLS 1.3 only and 128 concurrent
// streams, as svr's bench site is set up (servers.js). HTTP/1.1 gets the same file handler; an
// HTTP/2 stream is answered through Node's core API (stream.respond, no compatibility request and
// response objects), the least Node's HTTP/2 costs: the compatibility API's end() would also send
// an empty DATA frame after the body, which svr does not.
// Usage: node scripts/bench/node-ceiling.js --root DIR --port 8080 [--host 127.0.0.1] [--workers N]
//        node scripts/bench/node-ceiling.js --proxy http://127.0.0.1:8081 --port 8080 [--workers N]
//        node scripts/bench/node-ceiling.js --root DIR --cert cert.pem --key key.pem --port 8443
const cluster = require('cluster');
const fs = require('fs');
const http = require('http');
const os = require('os');
const path = require('path');
const minimist = require('minimist');
const mime = require('mime-types');

const args = minimist(process.argv.slice(2), { string: ['host', 'root', 'proxy', 'cert', 'key'], default: { host: '127.0.0.1' } });
const workerCount = Number(args.workers) || (typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length);
let shuttingDown = false;

// Every regular file directly in root, with its two answers' headers built once.
function loadFiles(root) {
  const files = new Map();
  for (const name of fs.readdirSync(root)) {
    const file = path.join(root, name);
    const stats = fs.statSync(file);
    if (!stats.isFile()) continue;
    const lastModified = stats.mtime.toUTCString();
    const etag = `"${stats.ino.toString(16)}-${stats.size.toString(16)}-${Math.floor(stats.mtimeMs).toString(16)}"`;
    const common = { Server: 'svr', Vary: 'Accept-Encoding' };
    files.set(`/${name}`, {
      body: fs.readFileSync(file),
      etag,
      ok: {
        ...common,
        'Content-Type': mime.contentType(path.extname(name)) || 'application/octet-stream',
        'Last-Modified': lastModified,
        'Accept-Ranges': 'bytes',
        'X-Content-Type-Options': 'nosniff',
        ETag: etag,
        'Content-Length': stats.size,
      },
      notModified: { ...common, 'Last-Modified': lastModified, ETag: etag },
    });
    const answers = files.get(`/${name}`);
    answers.okH2 = { ':status': 200, ...lowerCased(answers.ok) };
    answers.notModifiedH2 = { ':status': 304, ...lowerCased(answers.notModified) };
  }
  return files;
}

// The least a Node reverse proxy does: forward, pipe back, nothing else.
function proxyHandler(upstream) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const { hostname, port } = new URL(upstream);
  return (req, res) => {
    const forwarded = http.request({ agent, hostname, port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode, answer.headers);
      answer.pipe(res);
    });
    forwarded.on('error', () => {
      res.writeHead(502);
      res.end();
    });
    req.pipe(forwarded);
  };
}

function lowerCased(headers) {
  const out = {};
  for (const [name, value] of Object.entries(headers)) out[name.toLowerCase()] = value;
  return out;
}

function createServer() {
  if (args.proxy) return http.createServer(proxyHandler(args.proxy));
  const files = loadFiles(path.resolve(args.root));
  if (!args.cert) return http.createServer(fileHandler(files));
  const tls = { cert: fs.readFileSync(args.cert), key: fs.readFileSync(args.key), minVersion: 'TLSv1.3' };
  const settings = { maxConcurrentStreams: 128 };
  const server = require('http2').createSecureServer({ ...tls, allowHTTP1: true, settings }, fileHandler(files));
  // The request listener above made Node add its compatibility 'stream' listener: HTTP/2 streams
  // go to the core API's instead (HTTP/1.1 requests do not pass through 'stream').
  server.removeAllListeners('stream');
  server.on('stream', streamHandler(files));
  return server;
}

function streamHandler(files) {
  return (stream, headers) => {
    const file = files.get(headers[':path']);
    if (file === undefined) {
      stream.respond({ ':status': 404, server: 'svr', 'content-type': 'text/plain' });
      stream.end('not found\n');
    } else if (headers['if-none-match'] === file.etag) {
      stream.respond(file.notModifiedH2, { endStream: true });
    } else if (headers[':method'] === 'HEAD') {
      stream.respond(file.okH2, { endStream: true });
    } else {
      stream.respond(file.okH2);
      stream.end(file.body);
    }
  };
}

function startWorker() {
  const server = createServer();
  server.listen(Number(args.port), args.host);
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}

function fileHandler(files) {
  return (req, res) => {
    const file = files.get(req.url);
    if (file === undefined) {
      res.writeHead(404, { Server: 'svr', 'Content-Type': 'text/plain' });
      res.end('not found\n');
    } else if (req.headers['if-none-match'] === file.etag) {
      res.writeHead(304, file.notModified);
      res.end();
    } else {
      res.writeHead(200, file.ok);
      res.end(req.method === 'HEAD' ? undefined : file.body);
    }
  };
}

function startPrimary() {
  if (!process.env.NODE_CLUSTER_SCHED_POLICY) cluster.schedulingPolicy = cluster.SCHED_NONE; // as svr does by default
  for (let i = 0; i < workerCount; i++) cluster.fork();
  cluster.on('exit', (worker, code, signal) => {
    if (!shuttingDown) console.error(`node-ceiling: worker ${worker.process.pid} died (${signal || code})`);
    if (shuttingDown && Object.keys(cluster.workers).length === 0) process.exit(0);
  });
  const stop = () => {
    shuttingDown = true;
    for (const worker of Object.values(cluster.workers)) worker.kill('SIGTERM');
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

if (cluster.isPrimary === undefined ? cluster.isMaster : cluster.isPrimary) startPrimary();
else startWorker();
