'use strict';
// ACME in the primary: one AcmeManager for the config's certificate, whose challenges and
// certificates reach every worker by message (acme-challenge, acme-certificate in messages.js;
// each worker answers acme-done, and the manager waits for all).
// Challenges are also written to the state directory, for the other hosts that share it and for
// a worker that starts while one is pending.
//
//   startAcme(config, { workers() -> serving workers, log, previous }) -> AcmeManager | null
//   startAcme(config, { deliver(message) -> answered count, log })  --single-threaded: the
//     process's own worker takes the messages

const { acmeSettings } = require('../acme/settings');
const { AcmeStore, acmeDirectory } = require('../acme/store');
const { AcmeManager } = require('../acme/manager');

const ANSWER_TIMEOUT_MS = 5000;
let nextId = 1;
const pending = new Map(); // message id -> settle(ok)

// Sends message to every serving worker; resolves with how many answered ok (a worker that
// exits or does not answer within ANSWER_TIMEOUT_MS counts as not).
function broadcast(workers, message) {
  return Promise.all(workers.filter((w) => w.isConnected()).map((worker) => new Promise((resolve) => {
    const id = nextId++;
    const settle = (ok) => {
      clearTimeout(timer);
      pending.delete(id);
      worker.off('exit', onExit);
      resolve(ok);
    };
    const onExit = () => settle(false);
    const timer = setTimeout(() => settle(false), ANSWER_TIMEOUT_MS);
    pending.set(id, settle);
    worker.once('exit', onExit);
    worker.send({ ...message, id }, () => {});
  }))).then((results) => results.filter(Boolean).length);
}

// The supervisor's handler for a worker's acme-done.
function acmeDone(message) {
  const settle = pending.get(message.id);
  if (settle) settle(message.ok === true);
}

// previous: the manager this one replaces (a reload): its served serial and counts carry over.
function startAcme(config, { workers, deliver, log, previous = null }) {
  const settings = acmeSettings(config);
  if (!settings || !settings.certName) return null;
  const store = new AcmeStore(acmeDirectory(config));
  const serving = () => (workers ? workers().length : 1);
  const send = (message) => (deliver ? Promise.resolve(deliver(message)) : broadcast(workers(), message));
  const manager = new AcmeManager(settings, {
    store,
    log,
    publish: async (record) => {
      store.writeChallenge(record);
      await send({ type: 'acme-challenge', action: 'add', record });
    },
    withdraw: async (record) => {
      store.removeChallenge(record);
      await send({ type: 'acme-challenge', action: 'remove', record });
    },
    install: async (name) => {
      const total = serving();
      const loaded = await send({ type: 'acme-certificate', name });
      if (loaded < total) log.warn(`ACME: ${total - loaded} of ${total} worker(s) did not confirm the new certificate for ${name}`);
    },
  });
  if (previous && previous.settings.certName === settings.certName) {
    manager.failedTotal = previous.failedTotal;
    manager.orders = previous.orders;
  }
  manager.start(previous ? previous.installedSerial : null);
  return manager;
}

module.exports = { startAcme, broadcast, acmeDone };
