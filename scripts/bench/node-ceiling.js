#!/usr/bin/env node
'use strict';
// The node ceiling: what Node's HTTP stack allows on this machine for a static file. A `cluster`
// of N workers that read every file at the top of --root into memory at start and answer
// GET /<name> from memory with the response headers svr sends for a static file (Server, Vary,
// Content-Type, Last-Modified, Accept-Ranges, X-Content-Type-Options, ETag, Content-Length, Date),
// 304 for a matching If-None-Match, and nothing else: no logging, no stat, no routing, no
// compression. svr/node-ceiling is then what svr's pipeline costs over the bare minimum.
// Same scheduling policy as svr's default (SCHED_NONE: workers accept) unless NODE_CLUSTER_SCHED_POLICY is set.
// Usage: node scripts/bench/node-ceiling.js --root DIR --port 8080 [--host 127.0.0.1] [--workers N]
const cluster = require('cluster');
const fs = require('fs');
const http = require('http');
const os = require('os');
const path = require('path');
const minimist = require('minimist');
const mime = require('mime-types');

const args = minimist(process.argv.slice(2), { string: ['host', 'root'], default: { host: '127.0.0.1' } });
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
  }
  return files;
}

function startWorker() {
  const files = loadFiles(path.resolve(args.root));
  const server = http.createServer((req, res) => {
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
  });
  server.listen(Number(args.port), args.host);
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
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
