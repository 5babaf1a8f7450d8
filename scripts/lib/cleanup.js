/*
 * Clean-up shared by the scripts (benchmarks, query plans) that work under a
 * key prefix of their own and in a database of their own.
 */
// The scripts run from the build (npm run build first), as they do for the engine.
const { dropDatabase } = require('../../dist/audit/data-source');

/** Deletes every key under `<prefix>:` (SCAN + UNLINK, so Redis is never blocked). */
async function deletePrefix(redis, prefix) {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 5000);
    cursor = next;
    if (keys.length) await redis.unlink(...keys);
  } while (cursor !== '0');
}

module.exports = { deletePrefix, dropDatabase };
