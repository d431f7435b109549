'use strict';
// Placeholder pipeline for the foundation: serves files from wwwroot through serve-handler
// so the process model can be tested end to end. The real pipeline replaces this.

const serveHandler = require('serve-handler');

function createPipeline(config, context) {
  const options = { public: config.wwwroot, directoryListing: false, etag: false };
  return function handle(req, res) {
    res.setHeader('Server', 'svr');
    for (const [name, value] of Object.entries(config.customHeaders || {})) res.setHeader(name, value);
    serveHandler(req, res, options).catch((error) => {
      context.log.error(`request ${req.url} failed: ${error.message}`);
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  };
}

module.exports = { createPipeline };
