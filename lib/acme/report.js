'use strict';
// `svr certs`: what ACME has in the state directory, read from the files (the running server
// need not be asked): each certificate's names, issuer, expiry, next renewal, and the last error.
//
//   describeCertificates(config, { now }) -> lines of text

const { acmeSettings } = require('./settings');
const { AcmeStore, acmeDirectory } = require('./store');
const schedule = require('./schedule');

const DAY = 86400000;

function describeCertificates(config, { now = Date.now() } = {}) {
  const settings = acmeSettings(config);
  const root = acmeDirectory(config);
  const store = new AcmeStore(root);
  const names = store.certificateNames();
  const lines = [];
  if (!settings) lines.push('ACME is off in this config ("acme" is not set).');
  else if (!names.includes(settings.certName)) lines.push(`${settings.certName}: no certificate yet (until one is obtained, HTTPS serves the self-signed certificate)`);
  for (const name of names) {
    const issued = store.readCertificate(name);
    if (!issued) {
      lines.push(`${name}: damaged or incomplete files in ${store.certificateDir(name)}`);
      continue;
    }
    const { x509, meta } = issued;
    const expires = Date.parse(x509.validTo);
    const renewAt = schedule.renewAt(x509, meta.ari || null);
    const days = ((expires - now) / DAY).toFixed(1);
    lines.push(`${name}`,
      `  names:        ${(meta.names || [name]).join(', ')}`,
      `  issuer:       ${x509.issuer.replace(/\n/g, ', ')}`,
      `  expires:      ${new Date(expires).toISOString()} (${expires > now ? `in ${days} days` : 'EXPIRED'})`,
      `  next renewal: ${renewAt <= now ? 'due now (at the next check)' : new Date(renewAt).toISOString()}${meta.ari ? ' (the CA\'s renewal window)' : ' (two thirds of the lifetime)'}`,
      `  CA:           ${meta.directory || 'unknown'}`);
    if (settings && name !== settings.certName) lines.push('  (not the one this config asks for)');
    if (meta.lastError) lines.push(`  last error:   ${meta.lastErrorAt} ${meta.lastError}`);
  }
  return lines;
}

module.exports = { describeCertificates };
