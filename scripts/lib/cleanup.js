/*
 * Clean-up shared by the scripts (benchmarks, query plans) that work under a
 * key prefix of their own and in a database of their own.
 */
const { Client } = require('pg');

/** Deletes every key under `<prefix>:` (SCAN + UNLINK, so Redis is never blocked). */
async function deletePrefix(redis, prefix) {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 5000);
    cursor = next;
    if (keys.length) await redis.unlink(...keys);
  } while (cursor !== '0');
}

/** Drops the database named in `url` (connections forced out), through the server's `postgres` database. */
async function dropDatabase(url) {
  const u = new URL(url);
  const db = u.pathname.slice(1);
  u.pathname = '/postgres';
  const c = new Client({ connectionString: u.toString() });
  await c.connect();
  try {
    await c.query(`DROP DATABASE IF EXISTS "${db}" WITH (FORCE)`);
  } finally {
    await c.end();
  }
}

module.exports = { deletePrefix, dropDatabase };
