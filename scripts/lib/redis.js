/*
 * The Redis client of the scripts' clean-ups (scripts/lib/server.js cleanup,
 * scripts/lib/demo-clean.js), made by the server's own factory
 * (src/redis/connection.ts createRedis, so the build must exist): through
 * the Sentinels when REDIS_SENTINELS is set, as the server it cleans up after.
 */
const path = require('node:path');
const { existsSync } = require('node:fs');

const DIST = path.resolve(__dirname, '../../dist');

/**
 * @param {string} redisUrl the data node (or, with REDIS_SENTINELS, the data nodes' user, password, db and TLS)
 * @param {Record<string, string | undefined>} env where REDIS_SENTINELS, REDIS_SENTINEL_NAME and REDIS_SENTINEL_PASSWORD are read
 * @returns a client that reconnects by itself; disconnect() it when done
 * @throws Error when dist/ is missing or a variable is invalid (the config's message)
 */
function openRedis(redisUrl, env = process.env) {
  if (!existsSync(path.join(DIST, 'redis/connection.js'))) throw new Error('dist/ is missing: run npm run build first');
  const { loadConfig } = require(path.join(DIST, 'config/config'));
  const { createRedis } = require(path.join(DIST, 'redis/connection'));
  const config = loadConfig({
    REDIS_URL: redisUrl,
    REDIS_SENTINELS: env.REDIS_SENTINELS,
    REDIS_SENTINEL_NAME: env.REDIS_SENTINEL_NAME,
    REDIS_SENTINEL_PASSWORD: env.REDIS_SENTINEL_PASSWORD,
  });
  return createRedis(config, { name: 'sluice-cleanup' });
}

module.exports = { openRedis };
