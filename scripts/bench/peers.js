/*
 * The peers of the pipeline benchmark (pipeline.js, issue 35), each written as
 * a competent user would run it, in this (the load client's) process:
 *
 *  - pg-boss 12 (`pgBoss`): its job table is its history. Enqueue: `insert()`
 *    of --batch jobs per call. Processing: `work()` with `batchSize` 100 and
 *    `localConcurrency` 4 (four fetch loops in this process) and
 *    `burstWhenBatchFull` (fetch again at once while batches come back full;
 *    without it each loop waits its polling interval between fetches), the
 *    handler a no-op; timed until its job table says every job is
 *    `completed`. Idle latency: `send()` of one job, handler start by its own
 *    clock, on a queue with `notify: true` and the instance's
 *    `useListenNotify` (workers woken by LISTEN/NOTIFY; without it they poll,
 *    `pollingIntervalSeconds` ≥ 0.5 s).
 *  - BullMQ 6.7 with its history bolted on (`bullHistory`): the producer
 *    `addBulk()`s each batch, then inserts the batch's job rows into
 *    PostgreSQL (one multi-row INSERT via unnest); the Worker's `active` and
 *    `completed` events are buffered and written every 20 ms or 1,000 events,
 *    whichever first, as one multi-row INSERT into an events table and one
 *    UPDATE of the job rows (status, started/finished times). Processing is
 *    timed until every job's `completed` event is in PostgreSQL. This is what
 *    users who need BullMQ's history beyond `removeOnComplete` write
 *    (Langfuse, Trigger.dev v2 and others keep a jobs table beside BullMQ).
 *
 * Both use the run's own database (so the bench's `pgOurs` CPU column counts
 * their backends), in a schema / tables of their own, dropped by close().
 * Needs `npm i` (pg-boss is a devDependency) and PostgreSQL; BullMQ needs Redis
 * at REDIS_URL (systems.js's redisUrl()).
 */
const { performance } = require('node:perf_hooks');
const { Client, Pool } = require('pg');
const IORedis = require('ioredis');
const { Queue, Worker } = require('bullmq');
const { sleep } = require('./systems');
const systems = require('./systems');

let seq = 0;
const now = () => performance.now();

/**
 * pg-boss 12 on schema `bench_pgboss_<pid>` of `databaseUrl`.
 * @param {{databaseUrl: string}} opts
 * @returns {Promise<{name: string, rows(n: number, batch: number, cpu: () => Promise<object>): Promise<object>, latency(samples: number): Promise<number[]>, close(): Promise<void>}>}
 */
async function pgBoss({ databaseUrl }) {
  const { PgBoss } = await import('pg-boss');
  const schema = `bench_pgboss_${process.pid}`;
  const boss = new PgBoss({ connectionString: databaseUrl, schema, max: 10, supervise: false, schedule: false, useListenNotify: true });
  boss.on('error', (e) => console.error(`# pg-boss error: ${e.message}`));
  await boss.start();
  const sql = new Client({ connectionString: databaseUrl });
  await sql.connect();
  const completedOf = async (queue) => Number((await sql.query(`SELECT count(*)::int AS n FROM ${schema}.job WHERE name = $1 AND state = 'completed'`, [queue])).rows[0].n);
  return {
    name: 'pg-boss',
    /** Enqueue then processing of n jobs in a queue of its own; cpu() snapshots between phases. */
    async rows(n, batch, cpu) {
      const queue = `bench-${seq++}`;
      await boss.createQueue(queue);
      const c0 = await cpu();
      const t0 = now();
      for (let i = 0; i < n; i += batch) {
        const jobs = [];
        for (let j = i; j < Math.min(n, i + batch); j++) jobs.push({ data: { i: j } });
        await boss.insert(queue, jobs);
      }
      const enqRate = n / ((now() - t0) / 1000);
      const c1 = await cpu();
      let handled = 0;
      const t1 = now();
      const worker = await boss.work(queue, { batchSize: 100, localConcurrency: 4, pollingIntervalSeconds: 0.5, burstWhenBatchFull: true }, async (jobs) => {
        handled += jobs.length;
      });
      while (handled < n) await sleep(5);
      // The handler has returned for every job; pg-boss completes a batch after its handler: wait until the table says so.
      while ((await completedOf(queue)) < n) await sleep(20);
      const procRate = n / ((now() - t1) / 1000);
      const c2 = await cpu();
      await boss.offWork(queue, { id: worker });
      await boss.deleteQueue(queue);
      return { enqueue: { rate: enqRate, c0, c1 }, process: { rate: procRate, c1, c2 } };
    },
    /** ms from send() to the handler's start, one job at a time. */
    async latency(samples) {
      const queue = `bench-lat-${seq++}`;
      await boss.createQueue(queue, { notify: true });
      const lat = [];
      let t0 = 0;
      let started = () => undefined;
      const worker = await boss.work(queue, { batchSize: 1, pollingIntervalSeconds: 0.5 }, async () => {
        lat.push(Date.now() - t0);
        started();
      });
      for (let i = 0; i < samples; i++) {
        const s = new Promise((r) => (started = r));
        t0 = Date.now();
        await boss.send(queue, { i });
        await s;
        await sleep(5);
      }
      await boss.offWork(queue, { id: worker });
      await boss.deleteQueue(queue);
      return lat;
    },
    async close() {
      await boss.stop({ graceful: false, wait: true }).catch(() => undefined);
      await sql.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined);
      await sql.end().catch(() => undefined);
    },
  };
}

/**
 * BullMQ 6.7 plus a history in PostgreSQL (tables `bench_bull_jobs_<pid>`,
 * `bench_bull_events_<pid>` in `databaseUrl`), Worker concurrency `concurrency`.
 * @param {{databaseUrl: string, concurrency: number}} opts
 */
async function bullHistory({ databaseUrl, concurrency }) {
  const jobsT = `bench_bull_jobs_${process.pid}`;
  const eventsT = `bench_bull_events_${process.pid}`;
  const pool = new Pool({ connectionString: databaseUrl, max: 4 });
  await pool.query(`CREATE TABLE IF NOT EXISTS ${jobsT} (id text PRIMARY KEY, queue text NOT NULL, name text NOT NULL, data jsonb NOT NULL,
    status text NOT NULL, created_at timestamptz NOT NULL DEFAULT now(), started_at timestamptz, finished_at timestamptz)`);
  await pool.query(`CREATE TABLE IF NOT EXISTS ${eventsT} (id bigserial PRIMARY KEY, job_id text NOT NULL, event text NOT NULL, at timestamptz NOT NULL)`);
  await pool.query(`CREATE INDEX IF NOT EXISTS ${eventsT}_job ON ${eventsT} (job_id)`);

  /** The history writer of one Worker: events buffered, flushed every 20 ms or 1,000 events. */
  function historyWriter() {
    let buf = [];
    let written = 0;
    let flushing = Promise.resolve();
    const flush = () => {
      if (!buf.length) return flushing;
      const b = buf;
      buf = [];
      flushing = flushing.then(async () => {
        const ids = b.map((e) => e.id);
        const evs = b.map((e) => e.event);
        const ats = b.map((e) => new Date(e.at).toISOString());
        const c = await pool.connect();
        try {
          await c.query('BEGIN');
          await c.query(`INSERT INTO ${eventsT} (job_id, event, at) SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[])`, [ids, evs, ats]);
          // One UPDATE for the batch: a job's last event decides its status (a job both started and finished here ends `completed`).
          await c.query(
            `UPDATE ${jobsT} j SET status = CASE WHEN u.fin IS NOT NULL THEN 'completed' ELSE 'active' END,
               started_at = coalesce(u.st, j.started_at), finished_at = coalesce(u.fin, j.finished_at)
             FROM (SELECT id, min(at) FILTER (WHERE event = 'active') AS st, max(at) FILTER (WHERE event = 'completed') AS fin
                   FROM unnest($1::text[], $2::text[], $3::timestamptz[]) AS e(id, event, at) GROUP BY id) u WHERE j.id = u.id`,
            [ids, evs, ats],
          );
          await c.query('COMMIT');
        } finally {
          c.release();
        }
        written += b.filter((e) => e.event === 'completed').length;
      });
      return flushing;
    };
    const timer = setInterval(() => void flush(), 20);
    return {
      push(id, event) {
        buf.push({ id, event, at: Date.now() });
        if (buf.length >= 1000) void flush();
      },
      completedWritten: () => written,
      async stop() {
        clearInterval(timer);
        await flush();
      },
    };
  }

  const connection = new IORedis(systems.redisUrl(), { maxRetriesPerRequest: null });
  const queues = new Set();
  return {
    name: 'BullMQ + history',
    async rows(n, batch, cpu) {
      const name = `bench-bullh-${process.pid}-${seq++}`;
      const queue = new Queue(name, { connection });
      queues.add(queue);
      const c0 = await cpu();
      const t0 = now();
      for (let i = 0; i < n; i += batch) {
        const items = [];
        for (let j = i; j < Math.min(n, i + batch); j++) items.push({ name: 'noop', data: { i: j } });
        const added = await queue.addBulk(items);
        await pool.query(
          `INSERT INTO ${jobsT} (id, queue, name, data, status) SELECT id, $1, 'noop', d, 'waiting' FROM unnest($2::text[], $3::jsonb[]) AS t(id, d)`,
          [name, added.map((j) => `${name}:${j.id}`), added.map((j) => JSON.stringify(j.data))],
        );
      }
      const enqRate = n / ((now() - t0) / 1000);
      const c1 = await cpu();
      const history = historyWriter();
      const t1 = now();
      const worker = new Worker(name, async () => null, {
        connection: new IORedis(systems.redisUrl(), { maxRetriesPerRequest: null }),
        concurrency,
        removeOnComplete: { count: 1000 },
      });
      worker.on('active', (job) => history.push(`${name}:${job.id}`, 'active'));
      worker.on('completed', (job) => history.push(`${name}:${job.id}`, 'completed'));
      while (history.completedWritten() < n) await sleep(5);
      const procRate = n / ((now() - t1) / 1000);
      const c2 = await cpu();
      await worker.close();
      await history.stop();
      await queue.obliterate({ force: true });
      await queue.close();
      queues.delete(queue);
      return { enqueue: { rate: enqRate, c0, c1 }, process: { rate: procRate, c1, c2 } };
    },
    async close() {
      for (const q of queues) await q.obliterate({ force: true }).catch(() => undefined), await q.close().catch(() => undefined);
      connection.disconnect();
      await pool.query(`DROP TABLE IF EXISTS ${jobsT}, ${eventsT}`).catch(() => undefined);
      await pool.end().catch(() => undefined);
    },
  };
}

module.exports = { pgBoss, bullHistory };
