'use strict';
// Obtains and renews the site's certificate, in the primary only (one orderer per host; the lock
// makes it one per shared state directory). The workers answer the challenges and serve the
// result; the primary reaches them through the hooks:
//
//   new AcmeManager(settings, { store, log, publish(record), withdraw(record), install(name) })
//   manager.start()   checks now, then at least every 12 hours and at each renewal time
//   manager.status()  for metrics and `svr certs`
//
// A failure (the CA refusing, a challenge failing, the CA unreachable) is logged with the CA's
// problem type and detail, keeps whatever certificate is serving, and is retried with backoff
// (schedule.js).

const crypto = require('node:crypto');
const { AcmeClient, AcmeError, describeProblem, ariCertId } = require('./client');
const { generateKey, certificateRequest } = require('./keys');
const { acquire } = require('./lock');
const schedule = require('./schedule');
const { version } = require('../../package.json');

const envMs = (name, fallback) => {
  const value = Number(process.env[name]);
  return Number.isFinite(value) && value > 0 ? value : fallback;
};

class AcmeManager {
  constructor(settings, { store, log, publish, withdraw, install }) {
    this.settings = settings;
    this.store = store;
    this.log = log;
    this.hooks = { publish, withdraw, install };
    // For tests, which cannot wait hours: SVR_ACME_CHECK_MS, SVR_ACME_RETRY_MS, SVR_ACME_LOCK_TIMEOUT_MS.
    this.checkIntervalMs = envMs('SVR_ACME_CHECK_MS', schedule.CHECK_INTERVAL_MS);
    this.retryBaseMs = envMs('SVR_ACME_RETRY_MS', schedule.RETRY_BASE_MS);
    this.lockTimeoutMs = envMs('SVR_ACME_LOCK_TIMEOUT_MS', 10 * 60 * 1000);
    this.failures = 0; // in a row, for the backoff
    this.failedTotal = 0; // since start, for the metrics
    this.orders = 0;
    this.installedSerial = null;
    this.timer = null;
    this.running = null;
    this.stopped = false;
  }

  start(installedSerial = null) {
    this.installedSerial = installedSerial;
    this.runCheck();
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  runCheck() {
    clearTimeout(this.timer);
    if (this.stopped || this.running) return this.running;
    this.running = this.check()
      .catch((error) => this.log.error(`ACME: ${error.message}`))
      .finally(() => { this.running = null; });
    return this.running;
  }

  later(ms, why) {
    clearTimeout(this.timer);
    if (this.stopped) return;
    const delay = Math.max(0, Math.min(ms, this.checkIntervalMs));
    this.nextCheckAt = Date.now() + delay;
    this.log.info(`ACME: next check of ${this.settings.certName} in ${describeDelay(delay)} (${why})`);
    this.timer = setTimeout(() => this.runCheck(), delay);
    this.timer.unref();
  }

  // Is the certificate on disk the one to serve, and until when?
  async check() {
    const { certName } = this.settings;
    const current = this.store.readCertificate(certName);
    if (current && !this.mismatch(current)) {
      const renewAt = await this.renewalTime(current);
      if (Date.now() < renewAt) {
        await this.installIfNew(current);
        return this.later(renewAt - Date.now(), `renewal due ${new Date(renewAt).toISOString()}`);
      }
      this.log.info(`ACME: the certificate for ${certName} is due for renewal (expires ${current.x509.validTo})`);
    } else if (!current) {
      this.log.info(`ACME: no certificate for ${certName} yet: HTTPS serves the self-signed certificate until the CA issues one`);
    }
    return this.obtain(current);
  }

  // A certificate for other names or from another CA than the config says is replaced.
  mismatch(current) {
    const meta = current.meta;
    if (meta.directory !== this.settings.directory) return true;
    const names = Array.isArray(meta.names) ? meta.names : [];
    return names.length !== this.settings.names.length || this.settings.names.some((n) => !names.includes(n));
  }

  async renewalTime(current) {
    let ari = current.meta.ari || null;
    try {
      const window = await this.directoryClient().renewalInfo(current.x509.raw);
      if (window) {
        const same = ari && ari.start === window.start && ari.end === window.end;
        ari = { start: window.start, end: window.end, pick: same ? ari.pick : schedule.pickInWindow(window.start, window.end) };
        if (!same) this.store.writeMeta(this.settings.certName, { ...current.meta, ari });
      }
    } catch (error) {
      this.log.warn(`ACME: no renewal information from the CA (${error.message}); renewing at two thirds of the lifetime`);
      ari = null;
    }
    current.meta.ari = ari;
    return schedule.renewAt(current.x509, ari);
  }

  async installIfNew(current) {
    if (current.x509.serialNumber === this.installedSerial) return;
    await this.hooks.install(this.settings.certName);
    this.installedSerial = current.x509.serialNumber;
    this.log.info(`ACME: serving the certificate for ${this.settings.names.join(', ')} from ${issuerName(current.x509)} (serial ${current.x509.serialNumber}, expires ${current.x509.validTo}) in every worker`);
  }

  // Under the lock: another process or host may have renewed it while we waited.
  async obtain(previous) {
    const { certName } = this.settings;
    let release;
    try {
      release = await acquire(this.store.lockFile(certName), { timeoutMs: this.lockTimeoutMs, waitMs: this.lockTimeoutMs * 2, pollMs: Math.min(1000, this.lockTimeoutMs / 10) });
    } catch (error) {
      return this.failed(previous, error);
    }
    try {
      const fresh = this.store.readCertificate(certName);
      if (fresh && !this.mismatch(fresh) && (!previous || fresh.x509.serialNumber !== previous.x509.serialNumber)) {
        const renewAt = await this.renewalTime(fresh);
        if (Date.now() < renewAt) {
          this.log.info(`ACME: another process sharing the state directory obtained the certificate for ${certName}`);
          await this.installIfNew(fresh);
          this.failures = 0;
          return this.later(renewAt - Date.now(), `renewal due ${new Date(renewAt).toISOString()}`);
        }
      }
      const issued = await this.order(previous);
      this.failures = 0;
      const renewAt = await this.renewalTime(issued);
      this.log.info(`ACME: obtained a certificate for ${this.settings.names.join(', ')} in ${issued.elapsedMs} ms`);
      await this.installIfNew(issued);
      return this.later(renewAt - Date.now(), `renewal due ${new Date(renewAt).toISOString()}`);
    } catch (error) {
      this.forgetLostAccount(error);
      return this.failed(previous, error);
    } finally {
      release();
    }
  }

  // The CA no longer knows our account (deactivated, or a test CA restarted): the next attempt
  // makes a new one.
  forgetLostAccount(error) {
    const type = error && error.problem && error.problem.type;
    if (type !== 'urn:ietf:params:acme:error:accountDoesNotExist') return;
    this.store.removeAccount(this.settings.directory);
    this.log.warn(`ACME: the CA does not know the account any more; the next attempt creates a new one`);
  }

  failed(previous, error) {
    this.failures++;
    this.failedTotal++;
    const delay = schedule.retryDelay(this.failures, { baseMs: this.retryBaseMs });
    const serving = previous && Date.parse(previous.x509.validTo) > Date.now()
      ? `still serving the current certificate (expires ${previous.x509.validTo})`
      : 'still serving the self-signed certificate';
    const what = error instanceof AcmeError && error.problem ? `the CA said ${describeProblem(error.problem)}` : error.message;
    this.log.error(`ACME: could not obtain a certificate for ${this.settings.names.join(', ')} (attempt ${this.failures}): ${what}; ${serving}; next attempt in ${describeDelay(delay)}`);
    const meta = this.store.readMeta(this.settings.certName);
    if (meta) {
      try {
        this.store.writeMeta(this.settings.certName, { ...meta, lastError: what, lastErrorAt: new Date().toISOString() });
      } catch { /* the log has it */ }
    }
    this.later(delay, `retry after failure ${this.failures}`);
  }

  // For requests that need no account (the renewal information).
  directoryClient() {
    return this.directoryOnly ??= new AcmeClient({ directoryUrl: this.settings.directory, accountKey: null, userAgent: `svr/${version}` });
  }

  // The account: one per CA, made on first use and kept in the state directory.
  async accountClient() {
    const { directory, email, eab } = this.settings;
    const saved = this.store.readAccount(directory);
    if (saved) return new AcmeClient({ directoryUrl: directory, accountKey: saved.key, accountUrl: saved.url, userAgent: `svr/${version}` });
    const key = generateKey('ec-p256');
    const client = new AcmeClient({ directoryUrl: directory, accountKey: key, userAgent: `svr/${version}` });
    const { url } = await client.account({ email, eab });
    this.store.writeAccount(directory, { url, key, email });
    this.log.info(`ACME: created an account at ${directory}${email ? ` for ${email}` : ''}: ${url}`);
    return client;
  }

  async order(previous) {
    const startedAt = Date.now();
    const { names, certName, keyType, profile } = this.settings;
    const client = await this.accountClient();
    let replaces = null;
    // RFC 9773's `replaces`: only for a renewal of the same names at the same CA.
    if (previous && !this.mismatch(previous)) {
      try { replaces = ariCertId(previous.x509.raw); } catch { /* no AKI: a plain new order */ }
    }
    this.orders++;
    this.log.info(`ACME: ordering a certificate for ${names.join(', ')} from ${this.settings.directory}${profile ? ` (profile ${profile})` : ''}`);
    const order = await client.newOrder(names, { profile, replaces });
    for (const url of order.authorizations || []) await this.authorize(client, url);
    const ready = await client.poll(order.url, ['pending']);
    if (ready.status !== 'ready') throw new AcmeError(`the order is ${ready.status}`, ready.error || null);
    const key = generateKey(keyType);
    const done = await client.finalize(order, certificateRequest(key, names));
    if (done.status !== 'valid') throw new AcmeError(`the order is ${done.status} after finalizing`, done.error || null);
    const certPem = await client.certificate(done.certificate);
    const x509 = new crypto.X509Certificate(certPem);
    const meta = {
      names, directory: this.settings.directory, issuer: issuerName(x509), serial: x509.serialNumber,
      notBefore: new Date(x509.validFrom).toISOString(), notAfter: new Date(x509.validTo).toISOString(),
      obtainedAt: new Date().toISOString(), profile,
    };
    const keyPem = key.export({ type: 'pkcs8', format: 'pem' });
    this.store.writeCertificate(certName, { certPem, keyPem, meta });
    return { certPem, keyPem, x509, meta, elapsedMs: Date.now() - startedAt };
  }

  // One authorization: pick the first configured challenge the CA offers, answer it in every
  // worker, tell the CA, wait for its verdict, withdraw the answer.
  async authorize(client, url) {
    const authz = await client.get(url);
    if (authz.status === 'valid') return;
    const identifier = authz.identifier.value;
    const challenge = this.settings.challenges.map((type) => authz.challenges.find((c) => c.type === type)).find(Boolean);
    if (!challenge) throw new AcmeError(`the CA offers none of ${this.settings.challenges.join(', ')} for ${identifier} (it offers ${authz.challenges.map((c) => c.type).join(', ')})`);
    const record = { type: challenge.type, token: challenge.token, identifier, keyAuthorization: client.keyAuthorization(challenge.token) };
    await this.hooks.publish(record);
    try {
      await client.answerChallenge(challenge.url);
      const result = await client.poll(url, ['pending']);
      if (result.status !== 'valid') {
        const failedChallenge = (result.challenges || []).find((c) => c.error) || {};
        throw new AcmeError(`${challenge.type} for ${identifier} is ${result.status}`, failedChallenge.error || null);
      }
    } finally {
      await this.hooks.withdraw(record);
    }
  }

  status() {
    const meta = this.store.readMeta(this.settings.certName);
    return { name: this.settings.certName, meta, failedTotal: this.failedTotal, orders: this.orders, nextCheckAt: this.nextCheckAt || null };
  }
}

function issuerName(x509) {
  const cn = /CN=([^\n]+)/.exec(x509.issuer);
  return cn ? cn[1] : x509.issuer.replace(/\n/g, ', ');
}

function describeDelay(ms) {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 120000) return `${Math.round(ms / 1000)} s`;
  if (ms < 2 * 3600000) return `${Math.round(ms / 60000)} min`;
  return `${(ms / 3600000).toFixed(1)} h`;
}

module.exports = { AcmeManager, issuerName };
