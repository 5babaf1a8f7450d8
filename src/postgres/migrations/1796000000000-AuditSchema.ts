import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The audit mirror's schema. Append-only history: never edit a landed
 * migration, add a new one. Each index names the query it serves.
 */
export class AuditSchema1796000000000 implements MigrationInterface {
  name = 'AuditSchema1796000000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE jobs (
        id uuid PRIMARY KEY,
        queue text NOT NULL,
        type text NOT NULL,
        status text NOT NULL,
        priority int NOT NULL DEFAULT 0,
        attempts int NOT NULL DEFAULT 0,
        max_attempts int NOT NULL,
        backoff text NOT NULL,
        timeout_ms int NOT NULL,
        idempotency_key text,
        payload text NOT NULL,
        progress text,
        result text,
        last_error text,
        worker_id text,
        execution_seq int NOT NULL DEFAULT 0,
        created_at timestamptz NOT NULL,
        run_at timestamptz NOT NULL,
        started_at timestamptz,
        finished_at timestamptz,
        updated_at timestamptz NOT NULL,
        last_event_ms bigint NOT NULL,
        last_event_seq bigint NOT NULL
      )`);
    // GET /jobs?queue=&status= newest first, keyset on id (UUIDv7 ids sort by creation time).
    await q.query(`CREATE INDEX jobs_queue_status_id ON jobs (queue, status, id DESC)`);
    // GET /jobs?status= (any queue) newest first; also exact terminal counts per status.
    await q.query(`CREATE INDEX jobs_status_id ON jobs (status, id DESC)`);
    // GET /jobs?type= newest first.
    await q.query(`CREATE INDEX jobs_type_id ON jobs (type, id DESC)`);
    // Throughput per minute and retention pruning: terminal jobs by finish time.
    await q.query(`CREATE INDEX jobs_finished_at ON jobs (finished_at) WHERE finished_at IS NOT NULL`);
    // GET /dashboard/recent: last jobs by updated_at.
    await q.query(`CREATE INDEX jobs_updated_at ON jobs (updated_at DESC)`);

    await q.query(`
      CREATE TABLE job_events (
        seq bigserial PRIMARY KEY,
        queue text NOT NULL,
        stream_ms bigint NOT NULL,
        stream_seq bigint NOT NULL,
        job_id uuid NOT NULL,
        at timestamptz NOT NULL,
        event text NOT NULL,
        from_status text,
        to_status text,
        attempt int,
        execution_seq int,
        worker_id text,
        reason text,
        error text,
        data text
      )`);
    // Idempotent writes: a stream entry is inserted at most once.
    await q.query(`CREATE UNIQUE INDEX job_events_stream_entry ON job_events (queue, stream_ms, stream_seq)`);
    // GET /jobs/:id/events: one job's timeline in stream order.
    await q.query(`CREATE INDEX job_events_job ON job_events (job_id, stream_ms, stream_seq)`);
    // Retention pruning by age (dropped by 1796000700000: pruning goes by job_id).
    await q.query(`CREATE INDEX job_events_at ON job_events (at)`);

    await q.query(`
      CREATE TABLE job_executions (
        job_id uuid NOT NULL,
        execution_seq int NOT NULL,
        queue text NOT NULL,
        attempt int NOT NULL,
        worker_id text,
        started_at timestamptz NOT NULL,
        finished_at timestamptz,
        outcome text NOT NULL,
        error text,
        duration_ms int,
        PRIMARY KEY (job_id, execution_seq)
      )`);
    // (the primary key serves GET /jobs/:id/executions and UNIQUE(job_id, execution_seq))

    await q.query(`
      CREATE TABLE dead_letter_jobs (
        job_id uuid PRIMARY KEY,
        queue text NOT NULL,
        type text NOT NULL,
        payload text NOT NULL,
        last_error text,
        attempts int NOT NULL,
        failed_at timestamptz NOT NULL
      )`);
    // GET /jobs/dlq/all?queue= newest first (keyset on failed_at, job_id).
    await q.query(`CREATE INDEX dead_letter_jobs_queue_failed ON dead_letter_jobs (queue, failed_at DESC, job_id DESC)`);
    // GET /jobs/dlq/all (all queues) newest first.
    await q.query(`CREATE INDEX dead_letter_jobs_failed ON dead_letter_jobs (failed_at DESC, job_id DESC)`);

    await q.query(`
      CREATE TABLE job_logs (
        id bigserial PRIMARY KEY,
        queue text NOT NULL,
        stream_ms bigint NOT NULL,
        stream_seq bigint NOT NULL,
        job_id uuid NOT NULL,
        at timestamptz NOT NULL,
        attempt int NOT NULL,
        level text NOT NULL,
        message text NOT NULL
      )`);
    // Idempotent writes, as for job_events.
    await q.query(`CREATE UNIQUE INDEX job_logs_stream_entry ON job_logs (queue, stream_ms, stream_seq)`);
    // GET /jobs/:id/logs oldest first.
    await q.query(`CREATE INDEX job_logs_job ON job_logs (job_id, stream_ms, stream_seq)`);

    await q.query(`
      CREATE TABLE workers (
        id text PRIMARY KEY,
        hostname text NOT NULL,
        pid int NOT NULL,
        queues text NOT NULL,
        concurrency int NOT NULL,
        started_at timestamptz NOT NULL,
        last_heartbeat_at timestamptz NOT NULL,
        status text NOT NULL
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const t of ['workers', 'job_logs', 'dead_letter_jobs', 'job_executions', 'job_events', 'jobs']) {
      await q.query(`DROP TABLE IF EXISTS ${t}`);
    }
  }
}
