'use strict';
// The start's ACME step (process/start.js), for `svr check` and every start and reload: what a
// config with `acme` must have, and a warning when the CA could not reach it; at a start (not a
// check), what the state directory already holds.
//
//   reviewAcme(config) -> { errors: [message], warnings: [message] }   (messages about key `acme`)
//   storedCertificate(config) -> a line for the log, or null

const { acmeSettings } = require('./settings');
const { AcmeStore, acmeDirectory } = require('./store');

// A CA validates HTTP-01 on port 80 and TLS-ALPN-01 on 443: other ports work only when those are
// forwarded to them, or with a CA set to use them (a test CA).
function reviewAcme(config) {
  const result = { errors: [], warnings: [] };
  const settings = acmeSettings(config);
  if (!settings) return result;
  const name = settings.certName;
  if (!name) {
    result.errors.push('ACME needs a DNS name to ask a certificate for: set "domain" (or "acme.domains")');
    return result;
  }
  if (config.cert || config.key) {
    result.errors.push('svr serves "cert" and "key" when they are set, so a certificate from the CA would never be used: remove "cert" and "key", or "acme"');
  }
  const challenges = settings.challenges.filter((type) => type === 'http-01' || type === 'tls-alpn-01');
  if (challenges.length === 0) return result; // the schema names the unknown ones
  const plain = config.disableNonEncryptedServer === true ? null : portOf(config.port);
  const secure = portOf(config.sport);
  const reachable = (challenges.includes('http-01') && plain === 80) || (challenges.includes('tls-alpn-01') && secure === 443);
  if (!reachable) {
    result.warnings.push(`${name} is not served on port 80 (port: ${plain === null ? 'off' : plain}) nor 443 (sport: ${secure}), where a CA validates ` +
      `${challenges.join(' and ')}: the certificate can only be obtained when those ports are forwarded to this server or the CA is set to use these ports`);
  }
  return result;
}

// port: a number, "8080", "ADDRESS:PORT" or "[IPv6]:PORT" (a Unix socket has none).
function portOf(value) {
  if (Number.isInteger(value)) return value;
  const match = /(?:^|:)(\d+)$/.exec(String(value));
  return match ? Number(match[1]) : null;
}

function storedCertificate(config) {
  const settings = acmeSettings(config);
  if (!settings || !settings.certName) return null;
  const stored = new AcmeStore(acmeDirectory(config)).readCertificate(settings.certName);
  if (!stored) return null;
  return `ACME: the certificate for ${settings.certName} in the state directory expires ${stored.x509.validTo}; the workers serve it`;
}

module.exports = { reviewAcme, storedCertificate };
