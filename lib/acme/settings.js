'use strict';
// The `acme` key, resolved once: which names, which CA, which challenges, which key.
//   acmeSettings(config) -> null (ACME off) | { directory, email, names, certName, challenges, keyType, profile, eab }

const LETS_ENCRYPT = 'https://acme-v02.api.letsencrypt.org/directory';
const LETS_ENCRYPT_STAGING = 'https://acme-staging-v02.api.letsencrypt.org/directory';

function acmeSettings(config) {
  const acme = config && config.acme;
  if (!acme || typeof acme !== 'object') return null;
  const listed = Array.isArray(acme.domains) && acme.domains.length ? acme.domains : [config.domain];
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

module.exports = { acmeSettings, LETS_ENCRYPT, LETS_ENCRYPT_STAGING };
