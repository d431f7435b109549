'use strict';
// TEMPORARY stand-in until the schema-based loader lands (same interface).
const fs = require('node:fs');
const path = require('node:path');
const os = require('node:os');

const DEFAULT_CONFIG_FILE = path.join(__dirname, '..', 'config', 'svr-config.json');
const DEFAULTS = {
  port: 80, wwwroot: '.', enableLogging: true, logFormat: 'combined', workers: null,
  shutdownTimeout: 10000, keepAliveTimeout: 5000, headersTimeout: 20000, requestTimeout: 60000,
  maxHeaderSize: 16384, customHeaders: {},
};

function loadConfig(file) {
  let user;
  try {
    user = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (error) {
    return { config: null, errors: [`${file}: ${error.message}`] };
  }
  const config = { ...DEFAULTS, ...user };
  config.wwwroot = path.resolve(path.dirname(file), config.wwwroot);
  const errors = [];
  if (typeof config.port !== 'number') errors.push(`${file}: port: expected an integer, found ${JSON.stringify(config.port)}`);
  return { config: errors.length ? null : config, errors };
}

function workerCount(config) {
  return config.workers ?? (os.availableParallelism ? os.availableParallelism() : os.cpus().length);
}

module.exports = { loadConfig, workerCount, DEFAULT_CONFIG_FILE };
