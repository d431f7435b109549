'use strict';
// The `acme` key, resolved once: which names, which CA, which challenges, which key.
//   acmeSettings(config) -> null (ACME off) | { directory, email, names, certName, challenges, keyType, profile, eab }

const LETS_ENCRYPT = 'https://acme-v02.api.letsencrypt.org/directory';
const LETS_ENCRYPT_STAGING = 'https://acme-staging-v02.api.letsencrypt.org/directory';

function acmeSettings(config) {
  const acme = config && config.acme;
  if (!acme || typeof acme !== 'object') return null;
  const listed = Array.isArray(acme.domains) && acme.domains.length ? acme.domains : configuredHosts(config);
  const names = [...new Set(listed.filter((n) => typeof n === 'string' && n).map((n) => n.toLowerCase().replace(/\.$/, '')))];
  return {
    directory: acme.directory || LETS_ENCRYPT,
    email: acme.email || null,
    names,
    certName: names[0] || null,
    challenges: Array.isArray(acme.challenges) && acme.challenges.length ? acme.challenges : ['http-01', 'tls-alpn-01'],
    keyType: acme.keyType || 'ec-p256',
    profile: acme.profile || null,
    eab: acme.eab || null,
  };
}

// The names a config serves: `domain`, then each virtual host's and SNI entry's exact name (not
// "*" nor "*.example.com": a wildcard needs DNS-01; not one with a port; not an IP address).
const DNS_NAME = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+\.?$/i;
const IP_LIKE = /^[\d.]+$|:/;

function configuredHosts(config) {
  const hosts = [config.domain];
  for (const vhost of Array.isArray(config.wwwrootVHost) ? config.wwwrootVHost : []) if (vhost && vhost.host) hosts.push(vhost.host);
  for (const name of Object.keys(config.sni && typeof config.sni === 'object' ? config.sni : {})) hosts.push(name);
  return hosts.filter((host) => typeof host === 'string' && DNS_NAME.test(host) && !IP_LIKE.test(host));
}

module.exports = { acmeSettings, configuredHosts, LETS_ENCRYPT, LETS_ENCRYPT_STAGING };
