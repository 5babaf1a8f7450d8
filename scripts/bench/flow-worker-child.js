#!/usr/bin/env node
/*
 * The flow worker alone in its own process, as a `ROLE=scheduler` process
 * runs it (src/flows/flow-loop.ts); driven by scripts/bench/flows.js --apart
 * over IPC: fork(this, [redisPrefix]) → 'ready' once subscribed; 'stop' →
 * stops and exits.
 */
const path = require('node:path');
const dist = path.resolve(__dirname, '../../dist');
const { createRedis } = require(`${dist}/redis/connection`);
const { createRedisStores } = require(`${dist}/redis/stores`);
const { FlowWorkerLoop } = require(`${dist}/flows/flow-loop`);

const [prefix] = process.argv.slice(2);
(async () => {
  const redis = createRedis({ redisUrl: process.env.REDIS_URL || 'redis://127.0.0.1:6379', redisClusterNodes: null });
  const stores = createRedisStores(redis, prefix);
  const loop = new FlowWorkerLoop(stores.flows, (e) => console.error('flow worker:', e.message));
  await loop.start();
  process.on('message', async (m) => {
    if (m !== 'stop') return;
    await loop.stop();
    redis.disconnect();
    process.exit(0);
  });
  process.send('ready');
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
