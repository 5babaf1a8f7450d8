/*
 * Clean-up shared by the scripts (benchmarks, query plans) that work under a
 * key prefix of their own and in a database of their own.
 */
// The scripts run from the build (npm run build first), as they do for the engine.
const { dropDatabase } = require('../../dist/postgres/data-source');

/**
 * Deletes every key under `<prefix><sep>` (SCAN + UNLINK, so Redis is never blocked).
 * `sep` ':' (default) = everything; ':{' = the queues' keys only (API keys stay).
 */
async function deletePrefix(redis, prefix, sep = ':') {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}${sep}*`, 'COUNT', 5000);
    cursor = next;
    if (keys.length) await redis.unlink(...keys);
  } while (cursor !== '0');
}

module.exports = { deletePrefix, dropDatabase };
