'use strict';
// Virtual hosts as SVR.JS 4.4+: `wwwrootVHost` ([{ host?, ip?, wwwroot }]) gives a host its own
// web root, `enableDirectoryListingVHost` ([{ host?, ip?, enabled }]) its own listing switch; in
// each list the first matching entry wins (host patterns as http/host.js, ip = the local address).
//
//   createVirtualHosts(site, build) -> null (no such lists) | pick(req) -> built
//   (and site.rootFor(req): the request's own web root, for the rewrite map's isNotFile checks)
//
// build(hostSite) makes what depends on the root (the static stage, the error pages with their
// custom pages); it runs once per combination of root and listing switch, at load, so a request
// only picks. The directory listing, error pages, containment, hidden files and (pipeline/index.js)
// serverSideScript.js all follow the request's own root.

const { hostSite, compileVirtualHosts, firstMatch } = require('./site');

function createVirtualHosts(site, build) {
  const roots = compileVirtualHosts(site.config.wwwrootVHost);
  const listings = compileVirtualHosts(site.config.enableDirectoryListingVHost);
  if (roots.length === 0 && listings.length === 0) return null;
  const rootChoices = [site.config.wwwroot, ...roots.map(({ entry }) => entry.wwwroot)];
  const listingChoices = [site.config.enableDirectoryListing, ...listings.map(({ entry }) => entry.enabled === true)];
  const built = rootChoices.map((wwwroot, r) => listingChoices.map((enableDirectoryListing, l) => (
    build(r === 0 && l === 0 ? site : hostSite(site, { wwwroot, enableDirectoryListing }))
  )));
  const realRoots = built.map((row) => row[0].root);
  site.rootFor = (req) => realRoots[firstMatch(roots, req) + 1];
  return function pick(req) {
    return built[firstMatch(roots, req) + 1][firstMatch(listings, req) + 1];
  };
}

module.exports = { createVirtualHosts };
