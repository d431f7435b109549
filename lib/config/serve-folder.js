'use strict';
// `svr serve [DIR]`: a folder served with no config file. The config is made here, from the
// command line, and checked like any other (load.js's checkConfig), so every key not named below
// takes the schema's default.
//
//   serveFolderConfig({ dir, listing }, port) -> the config object ({ wwwroot, port, enableDirectoryListing })
//   choosePort(preferred)                     -> Promise<port>: `preferred` when nothing listens on
//                                                it, else one the kernel says is free
//   describeServe({ dir, listing, scripts })  -> the line a start logs about what it serves

const net = require('node:net');
const path = require('node:path');

const PREFERRED_PORT = 8080; // the shipped config's port, so `svr serve` and `npm start` look alike
// What the messages of a config made from the command line name instead of a file.
const SERVE_LABEL = 'svr serve';

function serveFolderConfig({ dir, listing }, port) {
  return { wwwroot: path.resolve(dir), port, enableDirectoryListing: listing === true };
}

// Whether `port` can be bound on every interface, as a worker will bind it.
function canListen(port) {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(null));
    server.listen({ port, ipv6Only: false }, () => {
      const bound = server.address().port;
      server.close(() => resolve(bound));
    });
  });
}

async function choosePort(preferred = PREFERRED_PORT) {
  if (await canListen(preferred) !== null) return preferred;
  const free = await canListen(0);
  if (free === null) throw new Error(`port ${preferred} is taken and the system gives no free port`);
  return free;
}

function describeServe({ dir, listing, scripts }) {
  const listingWord = listing ? 'directory listing on' : 'directory listing off (--listing turns it on)';
  const scriptsWord = scripts ? 'serverSideScript.js and mods on' : 'scripts off (--scripts turns them on)';
  return `svr serve: ${path.resolve(dir)}, ${listingWord}, ${scriptsWord}`;
}

module.exports = { serveFolderConfig, choosePort, describeServe, SERVE_LABEL, PREFERRED_PORT };
