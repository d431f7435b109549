'use strict';
// The counters of several hosts, in Redis (rateLimitStore.redis): the same GCRA as gcra.js, run
// by Redis as one Lua script per request, so the read and the update are one atomic step whatever
// host asks, and with Redis's own clock, so the hosts' clocks need not agree. Each key expires
// when its bucket would be full again: Redis holds only the clients that are being limited.
//
// The client is ioredis (reconnects by itself; commands can be made to fail at once while it is
// disconnected, and to time out). Nothing waits for Redis while it is down: isUp() is false from
// the first failure until it is ready again, and the counter (counter.js) answers without it.
//
//   new RedisStore({ url, timeoutMs, log }) .take(key, intervalMs, toleranceMs) -> Promise<answer>
//                                            .isUp()  .close()

// ioredis (about 60 modules; some 90 ms and several MiB of the primary's start) is loaded by the
// first store made: only a config with rateLimitStore.redis makes one.
let Redis = null;

const PREFIX = 'svr:rl:';
// KEYS[1] the key; ARGV interval and tolerance in ms. Returns {1, aheadMs} or {0, retryMs}.
const TAKE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local interval = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local ahead = tat - now
if ahead > tolerance then return {0, math.ceil(ahead - tolerance)} end
local next = tat + interval
redis.call('SET', KEYS[1], string.format('%.3f', next), 'PX', math.ceil(next - now))
return {1, math.floor(ahead)}
`;
const RECONNECT_MAX_MS = 2000;
const AFTER_TIMEOUT_MS = 1000; // a command that timed out: Redis is left alone this long

// The URL as the log shows it: a password in it is not written out.
function shownUrl(url) {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'the configured Redis';
  }
}

class RedisStore {
  constructor({ url, timeoutMs, log }) {
    this.url = shownUrl(url);
    this.log = log;
    this.up = false;
    this.quietUntil = 0;
    if (Redis === null) Redis = require('ioredis');
    this.client = new Redis(url, {
      enableOfflineQueue: false, // while disconnected a command fails at once instead of queueing
      maxRetriesPerRequest: 0,
      commandTimeout: timeoutMs,
      enableAutoPipelining: true, // the takes of one event-loop turn go out in one write
      retryStrategy: (times) => Math.min(100 * times, RECONNECT_MAX_MS),
    });
    this.client.defineCommand('svrRateTake', { numberOfKeys: 1, lua: TAKE });
    this.client.on('ready', () => this.setUp(true));
    this.client.on('error', (error) => this.setUp(false, error.message));
    this.client.on('close', () => this.setUp(false, 'connection closed'));
  }

  setUp(up, why) {
    if (up === this.up) return;
    this.up = up;
    if (up) this.log.info(`rate limits: Redis at ${this.url} is reachable; the hosts share their counters again`);
    else this.log.warn(`rate limits: Redis at ${this.url} is unreachable (${why}); rateLimitStore.whenDown applies until it is back`);
  }

  isUp() {
    return this.client.status === 'ready' && Date.now() >= this.quietUntil;
  }

  async take(key, intervalMs, toleranceMs) {
    try {
      const [allowed, ms] = await this.client.svrRateTake(PREFIX + key, intervalMs.toFixed(3), toleranceMs.toFixed(3));
      this.setUp(true);
      return allowed === 1 ? { allowed: true, aheadMs: ms } : { allowed: false, retryMs: ms };
    } catch (error) {
      this.quietUntil = Date.now() + AFTER_TIMEOUT_MS;
      this.setUp(false, error.message);
      return null; // the counter decides without Redis
    }
  }

  close() {
    this.client.disconnect();
  }
}

module.exports = { RedisStore, shownUrl };
