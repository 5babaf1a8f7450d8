import type { DataSource } from 'typeorm';
import type { RedisJobStore } from '../../redis/redis-job-store';

/** Jobs that finished in the last minute (the dashboard's `throughput`). */
export interface Throughput {
  completedPerMin: number;
  failedPerMin: number;
}

/**
 * Jobs completed / failed (into the DLQ) since $1 (epoch ms): a range scan of
 * the partial index `jobs_finished_at`, one heap visit per recent job.
 */
export const THROUGHPUT_SQL = `SELECT count(*) FILTER (WHERE status = 'completed')::float8 AS completed,
  count(*) FILTER (WHERE status = 'failed')::float8 AS failed
  FROM jobs WHERE finished_at > to_timestamp($1::float8 / 1000)`;

/**
 * Throughput over the last 60 s, from `jobs.finished_at` (Redis clock, so
 * "now" is read from Redis TIME too). A job retried out of the DLQ since
 * no longer counts as failed; finishes not mirrored yet (audit lag) are not
 * counted.
 * @returns counts per minute (integers).
 * @throws when Redis or Postgres is unreachable.
 */
export async function throughput(db: DataSource, store: RedisJobStore): Promise<Throughput> {
  const [sec, usec] = await store.redis.time();
  const now = Number(sec) * 1000 + Math.floor(Number(usec) / 1000);
  const [r] = (await db.query(THROUGHPUT_SQL, [now - 60_000])) as { completed: number; failed: number }[];
  return { completedPerMin: r.completed, failedPerMin: r.failed };
}
