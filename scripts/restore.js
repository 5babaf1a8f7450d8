#!/usr/bin/env node
// `npm run restore`: rebuilds the Redis state of every queue that lost it from
// PostgreSQL (src/restore/restore.ts), using the build in dist/ and the same
// environment as the server (REDIS_URL or REDIS_CLUSTER_NODES, REDIS_PREFIX,
// DATABASE_URL). Queues whose Redis epoch marker is present are left alone,
// so running it again restores nothing.
//   --dry-run        report what would be restored, write nothing
//   --queue <name>   only this queue (repeatable)
// Exit code: 0 done, 1 a queue could not be restored (or an error), 2 bad arguments.
const path = require('node:path');
const { existsSync } = require('node:fs');

const dist = path.resolve(__dirname, '../dist');
if (!existsSync(path.join(dist, 'restore/restore.js'))) {
  console.error('restore: dist/ is missing or stale: run npm run build first');
  process.exit(1);
}
const { loadConfig } = require(path.join(dist, 'config/config'));
const { openPostgres } = require(path.join(dist, 'postgres/data-source'));
const { createRedis } = require(path.join(dist, 'redis/connection'));
const { RedisScripts } = require(path.join(dist, 'redis/scripts'));
const { createRedisStores } = require(path.join(dist, 'redis/stores'));
const { QueueRestorer, formatRestoreReport } = require(path.join(dist, 'restore/restore'));

function parseArgs(argv) {
  const out = { dryRun: false, only: [] };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--dry-run') out.dryRun = true;
    else if (argv[i] === '--queue' && /^[a-z0-9][a-z0-9_-]{0,63}$/.test(argv[i + 1] ?? '')) out.only.push(argv[++i]);
    else {
      console.error(`restore: bad argument ${argv[i]} (use --dry-run, --queue <queue name>)`);
      process.exit(2);
    }
  }
  return out;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const config = loadConfig(process.env);
  const { dataSource } = await openPostgres(config.databaseUrl, 4);
  const redis = createRedis(config, { name: 'sluice-restore' });
  try {
    const scripts = new RedisScripts(redis);
    await scripts.verify();
    const stores = createRedisStores(redis, config.redisPrefix, undefined, scripts);
    const restorer = new QueueRestorer(dataSource, stores);
    const reports = await restorer.checkAll({ dryRun: args.dryRun, only: args.only });
    for (const r of reports) console.log(formatRestoreReport(r));
    const restored = reports.filter((r) => r.action === 'restored');
    const jobs = restored.reduce(
      (n, r) =>
        n +
        r.counts.waiting +
        r.counts.delayed +
        r.counts.active +
        r.counts.blocked +
        r.counts.failed +
        r.counts.cancelled,
      0,
    );
    if (args.dryRun)
      console.log(
        `dry run: ${reports.filter((r) => r.action === 'planned').length} queue(s) lost their Redis state`,
      );
    else if (restored.length) console.log(`restored ${jobs} job(s) in ${restored.length} queue(s)`);
    else console.log(`nothing to restore (${reports.length} queue(s) checked)`);
    return reports.some((r) => r.action === 'busy' || r.action === 'error') ? 1 : 0;
  } finally {
    await redis.quit().catch(() => redis.disconnect());
    await dataSource.destroy();
  }
}

main().then(
  (code) => process.exit(code),
  (e) => {
    console.error(`restore failed: ${e.message}`);
    process.exit(1);
  },
);
