import type { DataSource } from 'typeorm';
import type { Job } from '../core/job';
import type { JobStore, QueueStore } from '../core/ports';
import { JOB_SELECT, JobRow, rowToJob, UUID_RE } from './common';

/** The Postgres read of one job by primary key (`jobs_pkey`). $1 = id. */
export const GET_JOB_SQL = `SELECT ${JOB_SELECT} FROM jobs j WHERE j.id = $1`;

async function fromPostgres(db: DataSource, id: string): Promise<Job | null> {
  const rows: JobRow[] = await db.query(GET_JOB_SQL, [id]);
  return rows.length ? rowToJob(rows[0]) : null;
}

/**
 * One job, as `GET /jobs/:id` serves it: from Redis while the job is live
 * there (the freshest state: progress, lease holder, cancel request), else
 * from the Postgres projection (after Redis pruned it).
 *
 * Lookup: the `jobs` row names the queue (primary key read), then one
 * HGETALL of that queue's job hash. A job too new to be mirrored yet (no row)
 * is looked for in every queue of `queues.list()` (in parallel), and
 * Postgres is read once more if Redis does not have it either (the job may
 * have been mirrored and pruned from Redis in between). When the Postgres
 * read fails (PostgreSQL down), the job is looked for in every queue the
 * same way: a live job never depends on PostgreSQL.
 *
 * @param id job id; anything that is not a UUID is simply not found.
 * @returns the Job shape of src/core/job.ts (times epoch ms), or null when
 *   neither store knows the id.
 * @throws whatever the Redis client throws when unreachable, and the Postgres
 *   client's error when PostgreSQL fails and Redis does not have the job
 *   (the API maps both to 503); a corrupted Redis hash is decoded leniently.
 */
export async function getJob(db: DataSource, store: { jobs: JobStore; queues: QueueStore }, id: string): Promise<Job | null> {
  if (!UUID_RE.test(id)) return null;
  const id_ = id.toLowerCase();
  let row: Job | null;
  try {
    row = await fromPostgres(db, id_);
  } catch (e) {
    // PostgreSQL failing: a live job is still answered from Redis alone (API.md).
    const live = await fromAnyQueue(store, id_);
    if (live) return live;
    throw e;
  }
  if (row) return (await store.jobs.getJob(row.queue, id_)) ?? row;
  return (await fromAnyQueue(store, id_)) ?? (await fromPostgres(db, id_));
}

/** The job's hash looked for in every known queue (in parallel); null when none has it. */
async function fromAnyQueue(store: { jobs: JobStore; queues: QueueStore }, id: string): Promise<Job | null> {
  const queues = await store.queues.list();
  const live = await Promise.all(queues.map((q) => store.jobs.getJob(q, id)));
  return live.find((j) => j !== null) ?? null;
}
