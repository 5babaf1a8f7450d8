import { MigrationInterface, QueryRunner } from 'typeorm';
import { backfillFingerprints } from '../fingerprint-backfill';

/**
 * What the operator console's queries need (docs/console.md, "How its
 * endpoints work"; plans and timings in docs/query-plans.md):
 *
 * - `dead_letter_jobs.fingerprint` (API.md v1.1 "Dead-letter groups"): set
 *   by the audit writer when a job enters the DLQ (computed once, in Node,
 *   src/core/error-fingerprint.ts); rows already there are filled here.
 *   Index `(fingerprint, failed_at DESC) INCLUDE (queue, type)`: GET
 *   /jobs/dlq/groups aggregates it without reading the table's rows, and
 *   each group's newest sample is one index probe. The DLQ is written only
 *   on failures: a cheap index.
 * - `job_finishes_minute`: the per-second finish counters of `job_finishes`
 *   (migration 1796000900000), rolled up by the minute when the retention
 *   pass drops the seconds (after FINISHES_KEEP_MS), kept RETENTION_DAYS:
 *   GET /dashboard/metrics reads ≤ 10,080 rows per queue for 7 days. The
 *   writer's cost is unchanged (its trigger writes seconds only).
 * - `sluice_payload_jsonb(text)`: a job's payload text as jsonb, null when
 *   it is not JSON (never an error: a corrupt payload must not stop the
 *   writer), the expression of the partial GIN indexes that
 *   `PUT /queues/:name {"payloadSearch": true}` creates per queue
 *   (src/queues/payload-search.ts); `payload_search_queues` lists them.
 */
export class ConsoleQueries1796001400000 implements MigrationInterface {
  name = 'ConsoleQueries1796001400000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE dead_letter_jobs ADD COLUMN fingerprint text`);
    await q.query(`CREATE INDEX dead_letter_jobs_fingerprint ON dead_letter_jobs (fingerprint, failed_at DESC) INCLUDE (queue, type)`);
    while ((await backfillFingerprints(q, 5000)) > 0);

    await q.query(`CREATE TABLE job_finishes_minute (bucket timestamptz NOT NULL, queue text NOT NULL, completed int NOT NULL, failed int NOT NULL, PRIMARY KEY (bucket, queue))`);

    await q.query(`
      CREATE FUNCTION sluice_payload_jsonb(p text) RETURNS jsonb LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
      BEGIN
        RETURN p::jsonb;
      EXCEPTION WHEN others THEN
        RETURN NULL;
      END $$`);
    await q.query(`CREATE TABLE payload_search_queues (queue text PRIMARY KEY, index_name text NOT NULL, state text NOT NULL, updated_at timestamptz NOT NULL DEFAULT now())`);
  }

  async down(q: QueryRunner): Promise<void> {
    const rows = (await q.query(`SELECT index_name FROM payload_search_queues`)) as { index_name: string }[];
    for (const r of rows) await q.query(`DROP INDEX IF EXISTS "${r.index_name.replace(/"/g, '""')}"`);
    await q.query(`DROP TABLE IF EXISTS payload_search_queues`);
    await q.query(`DROP FUNCTION IF EXISTS sluice_payload_jsonb(text)`);
    await q.query(`DROP TABLE IF EXISTS job_finishes_minute`);
    await q.query(`DROP INDEX IF EXISTS dead_letter_jobs_fingerprint`);
    await q.query(`ALTER TABLE dead_letter_jobs DROP COLUMN IF EXISTS fingerprint`);
  }
}
