#!/usr/bin/env node
/*
 * The mirror writer alone in its own process, as `ROLE=audit` runs it in
 * docker-compose; driven by scripts/bench/audit.js over IPC:
 *   fork(this, [redisPrefix, databaseUrl]) → 'ready'; parent sends 'go'
 *   (start mirroring), then 'stop' (stop and exit).
 * Built so the parent can start the writer at the same instant as in its
 * in-process variant (a full `node dist/main.js` would start mirroring
 * during its own boot).
 */
const path = require('node:path');
const dist = path.resolve(__dirname, '../../dist');
const { createRedis } = require(`${dist}/redis/connection`);
const { createRedisStores } = require(`${dist}/redis/stores`);
const { MirrorWriter } = require(`${dist}/mirror/mirror-writer`);
const { openPostgres } = require(`${dist}/postgres/data-source`);

const [prefix, databaseUrl] = process.argv.slice(2);
(async () => {
  const redis = createRedis({
    redisUrl: process.env.REDIS_URL || 'redis://127.0.0.1:6379',
    redisClusterNodes: null,
  });
  const stores = createRedisStores(redis, prefix);
  const { dataSource } = await openPostgres(databaseUrl, 10);
  const writer = new MirrorWriter(stores, dataSource, {
    writerId: `child-${process.pid}`,
    idleMs: 2,
  });
  process.on('message', async (m) => {
    if (m === 'go') writer.start();
    if (m === 'stop') {
      await writer.stop();
      await dataSource.destroy();
      redis.disconnect();
      process.exit(0);
    }
  });
  process.send('ready');
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
