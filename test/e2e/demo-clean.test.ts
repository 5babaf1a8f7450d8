/**
 * `npm run demo -- --clean` (scripts/lib/demo-clean.js): removes the Redis
 * keys and databases that demos run with --keep left, names each, and leaves
 * a demo whose server still runs alone. Real Redis and PostgreSQL; the demo
 * leftovers are made up under ids of this test only.
 */
import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import { Client } from 'pg';
import { PG_BASE_URL } from '../support/postgres';
import { REDIS_URL } from '../support/redis';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { cleanDemos } = require('../../scripts/lib/demo-clean') as {
  cleanDemos(o: { redisUrl: string; pgUrl: string; only: RegExp; log: (l: string) => void }): Promise<{ removedPrefixes: string[]; droppedDatabases: string[]; running: string[] }>;
};

const tag = randomBytes(3).toString('hex');
const kept = `sluice-demo-t${tag}a`; // stopped demo: keys and a database
const orphan = `sluice-demo-t${tag}b`; // database only
const live = `sluice-demo-t${tag}c`; // a worker heartbeat right now
const dbOf = (p: string) => p.replace(/-/g, '_');

let redis: Redis;
let pg: Client;
beforeAll(async () => {
  redis = new Redis(REDIS_URL);
  pg = new Client({ connectionString: PG_BASE_URL });
  await pg.connect();
});
afterAll(async () => {
  for (const p of [kept, orphan, live]) {
    const keys = await redis.keys(`${p}:*`);
    if (keys.length) await redis.del(...keys);
    await pg.query(`DROP DATABASE IF EXISTS "${dbOf(p)}"`);
  }
  redis.disconnect();
  await pg.end();
});

test('removes stopped demos (keys and database), names each, skips a running one', async () => {
  await redis.set(`${kept}:queues`, 'x');
  await redis.zadd(`${kept}:workers`, Date.now() - 10 * 60_000, 'w-old');
  await redis.hset(`${kept}:{default}:job:1`, 'status', 'completed');
  await redis.zadd(`${live}:workers`, Date.now(), 'w-now');
  for (const p of [kept, orphan, live]) await pg.query(`CREATE DATABASE "${dbOf(p)}"`);

  const lines: string[] = [];
  const r = await cleanDemos({ redisUrl: REDIS_URL, pgUrl: PG_BASE_URL, only: new RegExp(`^sluice-demo-t${tag}`), log: (l) => lines.push(l) });

  expect(r).toEqual({ removedPrefixes: [kept], droppedDatabases: [dbOf(kept), dbOf(orphan)], running: [live] });
  expect(lines).toEqual([
    `removed Redis keys ${kept}:* (3 keys)`,
    `dropped database ${dbOf(kept)}`,
    `dropped database ${dbOf(orphan)}`,
    `skipped ${live}: its server still runs (stop that demo with Ctrl-C first)`,
  ]);
  expect(await redis.keys(`${kept}:*`)).toEqual([]);
  expect(await redis.keys(`${live}:*`)).toEqual([`${live}:workers`]);
  const { rows } = await pg.query(`SELECT datname FROM pg_database WHERE datname LIKE $1 ORDER BY 1`, [`sluice_demo_t${tag}%`]);
  expect(rows.map((x: { datname: string }) => x.datname)).toEqual([dbOf(live)]);

  // Nothing left to clean but the running demo.
  const again: string[] = [];
  await cleanDemos({ redisUrl: REDIS_URL, pgUrl: PG_BASE_URL, only: new RegExp(`^sluice-demo-t${tag}[ab]`), log: (l) => again.push(l) });
  expect(again).toEqual(['nothing to clean: no demo data left']);
});
