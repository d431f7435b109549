'use strict';
// How the primary (and --single-threaded) exits when it cannot start. Errors no restart can fix get
// their own status, which systemd/svr.service lists in RestartPreventExitStatus=, so systemd does not
// restart in a loop; anything else (a crash) still exits 1 or by a signal, and is restarted.
// The numbers are sysexits.h's, which admins may recognise.

const EXIT_CONFIG = 78; // EX_CONFIG: the config (or a mod, a certificate, the web root) is refused
const EXIT_CANNOT_LISTEN = 69; // EX_UNAVAILABLE: the port is in use, or listening is not permitted

const LISTEN_ERRORS = new Set(['EADDRINUSE', 'EACCES', 'EADDRNOTAVAIL']);

// The status for a worker's start-up failure, from the error code the worker reported.
function startFailureStatus(code) {
  if (LISTEN_ERRORS.has(code)) return EXIT_CANNOT_LISTEN;
  if (code === 'ECONFIG' || code === 'EBADWWWROOT') return EXIT_CONFIG;
  return 1;
}

module.exports = { EXIT_CONFIG, EXIT_CANNOT_LISTEN, startFailureStatus };
