'use strict';
// The process-wide names SVR.JS gives mods and serverSideScript.js, set up once per process
// before any mod is loaded (installModEnvironment), in workers, in --single-threaded mode and
// in the short-lived process that reads the mods' configValidators (mod-keys.js).
//
//   process.versions.svrjs     the SVR.JS API level svr implements (SVRJS_API_LEVEL)
//   process.serverConfig       the validated config (the object mods also get as `config`)
//   process.dirname            the state directory: SVR.JS's install directory, the parent of temp/
//   process.filename           svr.js
//   process.reqcounter, err4xxcounter, err5xxcounter, malformedcounter
//                              requests that reached the scripting stage, and their 4xx/5xx answers
//                              (malformed requests never reach it: always 0)
//   process.messageEventListeners
//                              SVR.JS mods push `(worker, serverconsole) => (message) => ...` here
//                              to answer their own messages in SVR.JS's primary. svr never runs mod
//                              code in its primary, so these listeners run in the worker that loaded
//                              them: a string a mod sends with process.send() that starts with
//                              "\x12" (SVR.JS's "to the primary" mark) is handed to them, and what
//                              they send back with worker.send() arrives as a process "message"
//                              event in the same worker. Limits: what a listener keeps is per
//                              worker, and a listener never sees another worker's messages.

const path = require('node:path');

const SVRJS_API_LEVEL = '4.5.0';
const TO_PRIMARY = '\x12';

let installed = false;
let listenerInstances = null; // built at the first message, once every mod has pushed its listener

function installModEnvironment({ stateDirectory, svrFile, log }) {
  if (process.versions && !process.versions.svrjs) {
    try { process.versions.svrjs = SVRJS_API_LEVEL; } catch { /* frozen: leave it */ }
  }
  process.dirname = stateDirectory;
  process.filename = svrFile;
  listenerInstances = null; // a new load of the mods (a --single-threaded reload) pushes anew
  if (installed) {
    process.messageEventListeners.length = 0;
    return;
  }
  installed = true;
  process.messageEventListeners = [];
  process.reqcounter = 0;
  process.err4xxcounter = 0;
  process.err5xxcounter = 0;
  process.malformedcounter = 0;
  process.serverConfig = {};
  routeModMessages(log);
}

// A stand-in for SVR.JS's cluster worker object, as the listeners see it.
function workerStandIn() {
  return {
    id: 0,
    process: { pid: process.pid },
    isConnected: () => true,
    send(message) {
      setImmediate(() => process.emit('message', message));
      return true;
    },
  };
}

function serverconsoleFor(log) {
  const info = (message) => log.info(`mod message listener: ${message}`);
  return {
    climessage: info, reqmessage: info, resmessage: info, locmessage: info,
    errmessage: (message) => log.error(`mod message listener: ${message}`),
    locerrmessage: (message) => log.error(`mod message listener: ${message}`),
    locwarnmessage: (message) => log.warn(`mod message listener: ${message}`),
  };
}

function deliver(message, log) {
  if (!listenerInstances) {
    const worker = workerStandIn();
    const serverconsole = serverconsoleFor(log);
    listenerInstances = [];
    for (const factory of process.messageEventListeners) {
      if (typeof factory !== 'function') continue;
      const listener = factory(worker, serverconsole);
      if (typeof listener === 'function') listenerInstances.push(listener);
    }
  }
  for (const listener of listenerInstances) listener(message);
}

// process.send(string starting with "\x12") goes to the listeners above, asynchronously as IPC
// would; everything else (svr's own messages) goes to the primary as before. Without a primary
// (--single-threaded, the mod-keys process) process.send is defined for these strings only.
function routeModMessages(log) {
  const original = typeof process.send === 'function' ? process.send.bind(process) : null;
  const send = function send(message, ...rest) {
    if (typeof message === 'string' && message.startsWith(TO_PRIMARY)) {
      const callback = rest.find((arg) => typeof arg === 'function');
      setImmediate(() => {
        deliver(message, log);
        if (callback) callback(null);
      });
      return true;
    }
    if (original) return original(message, ...rest);
    return false;
  };
  if (original) process.send = send;
  else Object.defineProperty(process, 'send', { value: send, configurable: true, writable: true });
}

// SVR.JS's request counter: the scripting stage calls it for each request it sees.
function countRequest() {
  process.reqcounter++;
}

// SVR.JS's 4xx/5xx counters: called for each of those requests' responses, with its status, when
// its head is written.
function countAnswer(status) {
  if (status >= 400 && status < 500) process.err4xxcounter++;
  else if (status >= 500 && status < 600) process.err5xxcounter++;
}

function svrFile() {
  return path.resolve(__dirname, '..', '..', '..', 'svr.js');
}

module.exports = { installModEnvironment, countRequest, countAnswer, svrFile };
