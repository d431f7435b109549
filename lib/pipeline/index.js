'use strict';
// The request pipeline of a worker.
//
//   createPipeline(config, context) -> handler(req, res)
//
// Built ONCE per worker from the validated config (path keys absolute). context:
//   { log, configFile, version, scripting?, createScripting? }
// Stages, in order (each either answers the request or passes it on):
//   1. sanitize          lib/sanitize.js          414, 400, 403, OPTIONS *, 301 to the clean URL
//   2. rewrite map       lib/rewrite.js           rules compiled here, first match wins, 403 on escape
//   3. response headers  lib/response-headers.js  Server + customHeaders (precomputed)
//   4. server-side JS    (issue 4)                SEAM, see below
//   5. static files      lib/static.js            + lib/listing.js, lib/conditional.js, serve-handler
//   6. error pages       lib/error-pages.js       one renderer for every status
//
// Seam for stage 4 (server-side JavaScript: mods, then serverSideScript.js):
//   - context.scripting: optional function scripting(req, res, next). Call next() to pass the
//     request on to the static stage; answer the request yourself otherwise. A throw from it becomes
//     a 500 via sendError.
//   - or context.createScripting: optional factory called once here as
//     createScripting({ config, sendError, serveStatic, log }) and returning such a function.
//   - The tools it needs are also on the returned handler:
//       handler.sendError(req, res, status, { extName, error, headers })  the error renderer
//         (extName: "ModName/1.0" shown in the footer only with exposeModsInErrorPages; error: its
//         stack shown only with stackHidden false; headers: extra headers, e.g. { Allow })
//       handler.serveStatic(req, res)  the static stage (method policy included); never rejects.
//         If a script changed req.url, serveStatic sanitizes the new URL again.
//   - What stages 1-2 learnt is on req.svr: { originalUrl, cleanHref, cleanSearch, pathname
//     (decoded, normalised, after rewriting), url (req.url as set by the pipeline), rewritten }.
//     req.url is the clean (and possibly rewritten) URL.
// The access log is written outside the pipeline (lib/access-log.js).

const { createErrorPages } = require('./error-pages');
const { createSanitizer } = require('./sanitize');
const { createRewriter, compileRewriteMap } = require('./rewrite');
const { createResponseHeaders, validateCustomHeaders } = require('./response-headers');
const { createStatic } = require('./static');

const noopLog = { info() {}, warn() {}, error() {} };

// Checks the pipeline's own keys beyond what the JSON schema can say (compiled regexes, header
// syntax). Returns human strings naming the key path; lib/config.js may call it.
function validatePipelineConfig(config) {
  return [
    ...compileRewriteMap(config.rewriteMap).errors,
    ...validateCustomHeaders(config.customHeaders),
  ];
}

function createPipeline(config, context) {
  const ctx = Object.assign({ log: noopLog }, context);
  const problems = validatePipelineConfig(config);
  if (problems.length) {
    const err = new Error(problems.join('\n'));
    err.configErrors = problems;
    throw err;
  }
  const sendError = createErrorPages(config, ctx);
  const sanitize = createSanitizer(config, { sendError });
  const rewrite = createRewriter(config, { sendError });
  const headers = createResponseHeaders(config, ctx);
  const serveStatic = createStatic(config, ctx, { sendError });

  // ---- stage 4 plugs in here ----
  let scripting = typeof ctx.scripting === 'function' ? ctx.scripting : null;
  if (!scripting && typeof ctx.createScripting === 'function') {
    scripting = ctx.createScripting({ config, sendError, serveStatic, log: ctx.log });
  }

  function fail(req, res, err) {
    sendError(req, res, 500, { error: err });
  }

  async function afterRewrite(req, res) {
    headers.late(req, res); // stage 3 (the fixed headers were set first thing)
    if (scripting) { // stage 4
      const next = () => { serveStatic(req, res); };
      try {
        await scripting(req, res, next);
      } catch (err) {
        fail(req, res, err);
      }
      return;
    }
    await serveStatic(req, res); // stage 5 (stage 6 is sendError, called by every stage)
  }

  function handler(req, res) {
    try {
      headers.early(res);
      if (!sanitize(req, res)) return; // stage 1
      if (rewrite) { // stage 2
        rewrite(req, res).then((go) => (go ? afterRewrite(req, res) : undefined)).catch((err) => fail(req, res, err));
        return;
      }
      afterRewrite(req, res).catch((err) => fail(req, res, err));
    } catch (err) {
      fail(req, res, err);
    }
  }

  handler.sendError = sendError;
  handler.serveStatic = serveStatic;
  return handler;
}

module.exports = { createPipeline, validatePipelineConfig };
