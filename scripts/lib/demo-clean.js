/*
 * `npm run demo -- --clean`: removes what demos run with --keep left
 * behind: the Redis keys under each demo prefix (`sluice-demo-*:`) and each
 * demo database (`sluice_demo_*`, named after its prefix by
 * scripts/lib/server.js isolation()). A demo whose server still runs (a
 * worker heartbeat in the last minute, or a connection to its database) is
 * left alone and named. Prints every prefix and database it removes.
 * Demos run with REDIS_PREFIX or DATABASE_URL set are not found here: their
 * data is where those variables put it.
 */
const DEMO_PREFIX = /^sluice-demo-[a-z0-9]+$/;
const LIVE_WITHIN_MS = 60_000;

const dbOf = (prefix) => prefix.replace(/[^a-z0-9_]/gi, '_');

/**
 * @param {{redisUrl?: string, pgUrl?: string, only?: RegExp, log?: (line: string) => void}} opts
 *   pgUrl: any database on the server (its `postgres` database is used);
 *   only: the demo prefixes to consider (default: every `sluice-demo-<id>`)
 * @returns {Promise<{removedPrefixes: string[], droppedDatabases: string[], running: string[]}>}
 */
async function cleanDemos({ redisUrl = process.env.REDIS_URL || 'redis://127.0.0.1:6379', pgUrl = 'postgres://postgres@127.0.0.1:5432/postgres', only = DEMO_PREFIX, log = console.log } = {}) {
  const { Client } = require('pg');
  const { openRedis } = require('./redis');
  const admin = new URL(pgUrl);
  admin.pathname = '/postgres';
  const redis = openRedis(redisUrl);
  const pg = new Client({ connectionString: admin.toString() });
  try {
    await redis.ping();
    await pg.connect();
  } catch (e) {
    redis.disconnect(); // it would reconnect for ever
    throw e;
  }
  try {
    // Demo prefixes with keys in Redis, and demo databases.
    const keys = new Map();
    let cursor = '0';
    do {
      const [c, page] = await redis.scan(cursor, 'MATCH', 'sluice-demo-*', 'COUNT', 5000);
      cursor = c;
      for (const k of page) {
        const p = k.split(':')[0];
        if (DEMO_PREFIX.test(p) && only.test(p)) keys.set(p, (keys.get(p) || 0) + 1);
      }
    } while (cursor !== '0');
    const { rows } = await pg.query(
      `SELECT d.datname, (SELECT count(*) FROM pg_stat_activity a WHERE a.datname = d.datname)::int AS conns
         FROM pg_database d WHERE d.datname LIKE 'sluice\\_demo\\_%'`,
    );
    const dbs = new Map(rows.map((r) => [r.datname, r.conns]));
    const names = new Set([...keys.keys(), ...[...dbs.keys()].map((d) => d.replace(/^sluice_demo_/, 'sluice-demo-')).filter((p) => DEMO_PREFIX.test(p) && only.test(p))]);

    const out = { removedPrefixes: [], droppedDatabases: [], running: [] };
    const now = Date.now();
    for (const prefix of [...names].sort()) {
      const db = dbOf(prefix);
      const beat = await redis.zrangebyscore(`${prefix}:workers`, now - LIVE_WITHIN_MS, '+inf', 'LIMIT', 0, 1);
      if (beat.length || dbs.get(db) > 0) {
        out.running.push(prefix);
        log(`skipped ${prefix}: its server still runs (stop that demo with Ctrl-C first)`);
        continue;
      }
      if (keys.has(prefix)) {
        let c = '0';
        do {
          const [next, page] = await redis.scan(c, 'MATCH', `${prefix}:*`, 'COUNT', 5000);
          c = next;
          if (page.length) await redis.unlink(...page);
        } while (c !== '0');
        out.removedPrefixes.push(prefix);
        log(`removed Redis keys ${prefix}:* (${keys.get(prefix)} keys)`);
      }
      if (dbs.has(db)) {
        await pg.query(`DROP DATABASE IF EXISTS "${db}"`);
        out.droppedDatabases.push(db);
        log(`dropped database ${db}`);
      }
    }
    if (!out.removedPrefixes.length && !out.droppedDatabases.length && !out.running.length) log('nothing to clean: no demo data left');
    return out;
  } finally {
    redis.disconnect();
    await pg.end();
  }
}

module.exports = { cleanDemos, DEMO_PREFIX };
