import { MigrationInterface, QueryRunner } from 'typeorm';
import { DAY_MS, HISTORY_TABLES, PARTITION_DAYS_AHEAD, dayStart, ensureDays, uuidFloor } from '../partitions';

/**
 * The history tables become time-partitioned (issue 22; src/postgres/partitions.ts):
 * `jobs` by RANGE (id), `job_events`, `job_logs`, `job_executions` and
 * `job_dependencies` by RANGE (job_id) — a UUIDv7's creation day — laid
 * out `_kept` (MINVALUE up to yesterday), one partition per day up to
 * {@link PARTITION_DAYS_AHEAD} days ahead, `_ahead` (to MAXVALUE).
 *
 * Keys: `job_events` and `job_logs` were keyed by their stream entry
 * (queue, stream_ms, stream_seq) with a second index (job_id, stream_ms,
 * stream_seq) for a job's timeline. A key of a partitioned table must hold
 * the partition column, and a job's entries are all in its own queue's
 * stream, so (job_id, stream_ms, stream_seq) identifies an entry as well:
 * it becomes the primary key (the writer's `ON CONFLICT` target) and the
 * second index goes — one index insertion less per event and per log line.
 * `jobs_updated_at (updated_at DESC)` becomes `jobs_queue_updated_at (queue,
 * updated_at DESC)`: a project's recent jobs are the newest of each of its
 * queues (src/dashboard/recent-jobs.ts), not a walk of everyone's updates.
 *
 * Upgrade with data: each table is renamed `<table>_legacy` (its indexes
 * and constraints too), stripped of what a partition may not have (the
 * counters' triggers with transition tables, the key the parent does not
 * share) and attached as the partition FROM (MINVALUE) TO (tomorrow, UTC;
 * `_ahead` above it, holding the rows of later days — ids of a clock that
 * ran ahead — and the days carved out of it): the rows stay where they are, readable
 * throughout by the same queries; only the new key of the events and logs
 * and `jobs_queue_updated_at` are built over them (the migration's cost is
 * those builds, minutes per hundred million rows, under ACCESS EXCLUSIVE:
 * docs/history-partitions.md gives the numbers and an online path).
 * Empty tables (a fresh install) are dropped instead. The legacy
 * partition retires whole when its bound passes the retention window (its
 * keepers start `_kept`); until then retention prunes it row by row as before.
 * Payload-search indexes (src/queues/payload-search.ts) are recreated on
 * the parent, attaching the legacy table's existing ones.
 */
export class PartitionedHistory1796001800000 implements MigrationInterface {
  name = 'PartitionedHistory1796001800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`LOCK TABLE ${HISTORY_TABLES.map((t) => t.name).join(', ')} IN ACCESS EXCLUSIVE MODE`);
    // The legacy partition ends with today (UTC): rows of later days (ids made by a clock running
    // ahead, up to the top of the 48-bit range) move to `_ahead`, as the writer would have put them, so
    // the days after today are carved as usual and the legacy partition retires on time.
    const boundId = uuidFloor(dayStart(Date.now()) + DAY_MS);

    for (const t of ['jobs_count_ins', 'jobs_count_upd', 'jobs_count_del', 'jobs_count_trunc', 'jobs_finishes_ins', 'jobs_finishes_upd', 'jobs_finishes_trunc']) {
      await q.query(`DROP TRIGGER IF EXISTS ${t} ON jobs`);
    }
    await q.query(`DROP STATISTICS IF EXISTS jobs_queue_type_dep`);
    const payloadIndexes = (await q.query(`SELECT queue, index_name FROM payload_search_queues`)) as { queue: string; index_name: string }[];
    // The newest stream entry mirrored per queue (restore and the loss watch read it: src/restore). It was the top of
    // job_events' key (queue, stream_ms, stream_seq), which the partitioned table no longer has; the writer keeps this
    // row per queue instead (src/mirror/batch-writer.ts), seeded here from the rows so far (one pass over the events, by that key).
    await q.query(`CREATE TABLE queue_stream_tops (queue text PRIMARY KEY, stream_ms bigint NOT NULL, stream_seq bigint NOT NULL)`);
    await q.query(
      `INSERT INTO queue_stream_tops (queue, stream_ms, stream_seq)
       SELECT DISTINCT ON (queue) queue, stream_ms, stream_seq FROM (
         SELECT queue, stream_ms, stream_seq FROM job_events UNION ALL SELECT queue, stream_ms, stream_seq FROM job_logs) e
       ORDER BY queue, stream_ms DESC, stream_seq DESC`,
    );

    // Rows in any of the five history tables: an upgrade (every table keeps its old rows as `_legacy`, even an empty one, so the five stay laid out alike).
    let upgrade = false;
    for (const t of HISTORY_TABLES) if (((await q.query(`SELECT 1 FROM ${t.name} LIMIT 1`)) as unknown[]).length) upgrade = true;
    const low = uuidFloor(dayStart(Date.now() - DAY_MS));
    for (const t of HISTORY_TABLES) {
      const legacy = `${t.name}_legacy`;
      await q.query(`ALTER TABLE ${t.name} RENAME TO ${legacy}`);
      const indexes = (await q.query(
        `SELECT ic.relname AS name FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid WHERE i.indrelid = $1::regclass`,
        [legacy],
      )) as { name: string }[];
      for (const ix of indexes) await q.query(`ALTER INDEX ${ix.name} RENAME TO ${ix.name}_legacy`);
      await q.query(`CREATE TABLE ${t.name} (LIKE ${legacy} INCLUDING DEFAULTS) PARTITION BY RANGE (${t.key})`);
      for (const ddl of PARENT_DDL[t.name]) await q.query(ddl);
      if (upgrade) {
        // Rows of the days after today leave for `_ahead` (normally none; by the old key's index, before it goes).
        await q.query(`CREATE TABLE ${t.name}_ahead (LIKE ${t.name} INCLUDING DEFAULTS)`);
        await q.query(`WITH moved AS (DELETE FROM ${legacy} WHERE ${t.key} >= '${boundId}' RETURNING *) INSERT INTO ${t.name}_ahead SELECT * FROM moved`);
        // What the parent does not share would be kept and written for nothing (the old keys, the old recent-jobs index).
        for (const ix of LEGACY_DROPS[t.name] ?? []) await q.query(ix);
        await q.query(`ALTER TABLE ${t.name} ATTACH PARTITION ${legacy} FOR VALUES FROM (MINVALUE) TO ('${boundId}')`);
        await q.query(`ALTER TABLE ${t.name} ATTACH PARTITION ${t.name}_ahead FOR VALUES FROM ('${boundId}') TO (MAXVALUE)`);
      } else {
        await q.query(`DROP TABLE ${legacy}`);
        await q.query(`CREATE TABLE ${t.name}_kept PARTITION OF ${t.name} FOR VALUES FROM (MINVALUE) TO ('${low}')`);
        await q.query(`CREATE TABLE ${t.name}_ahead PARTITION OF ${t.name} FOR VALUES FROM ('${low}') TO (MAXVALUE)`);
      }
    }

    await q.query(`CREATE STATISTICS jobs_queue_type_dep (dependencies) ON queue, type FROM jobs`);
    for (const ev of ['INSERT', 'UPDATE', 'DELETE', 'TRUNCATE'] as const) {
      await q.query(`CREATE TRIGGER jobs_count_${TRIGGER_SUFFIX[ev]} AFTER ${ev} ON jobs ${TRANSITIONS[ev]} FOR EACH STATEMENT EXECUTE FUNCTION sluice_job_counts()`);
      if (ev !== 'DELETE') {
        await q.query(`CREATE TRIGGER jobs_finishes_${TRIGGER_SUFFIX[ev]} AFTER ${ev} ON jobs ${TRANSITIONS[ev]} FOR EACH STATEMENT EXECUTE FUNCTION sluice_job_finishes()`);
      }
    }
    for (const p of payloadIndexes) {
      // Attaches the legacy partition's index of the same definition (renamed above), builds it on the others (empty).
      await q.query(`CREATE INDEX IF NOT EXISTS ${p.index_name} ON jobs USING gin (sluice_payload_jsonb(payload) jsonb_path_ops) WHERE queue = '${p.queue.replace(/'/g, "''")}'`);
    }
    await ensureDays(q, Date.now() - DAY_MS, Date.now() + PARTITION_DAYS_AHEAD * DAY_MS, true);
  }

  async down(): Promise<void> {
    throw new Error('PartitionedHistory1796001800000 cannot be undone in place: restore a backup taken before it (docs/history-partitions.md)');
  }
}

const TRIGGER_SUFFIX = { INSERT: 'ins', UPDATE: 'upd', DELETE: 'del', TRUNCATE: 'trunc' } as const;
const TRANSITIONS = {
  INSERT: 'REFERENCING NEW TABLE AS new_rows',
  UPDATE: 'REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows',
  DELETE: 'REFERENCING OLD TABLE AS old_rows',
  TRUNCATE: '',
} as const;

/** The parents' keys and indexes; each index names the query it serves (docs/query-plans.md). */
const PARENT_DDL: Record<string, string[]> = {
  jobs: [
    `ALTER TABLE jobs ADD CONSTRAINT jobs_pkey PRIMARY KEY (id)`,
    // GET /jobs?queue=&status= newest first; ?queue= (one range per status); ?status= (one range per queue).
    `CREATE INDEX jobs_queue_status_id ON jobs (queue, status, id DESC)`,
    // GET /jobs?type=(&status=) newest first.
    `CREATE INDEX jobs_type_status_id ON jobs (type, status, id DESC)`,
    // GET /dashboard/recent: the newest updates of each of the project's queues.
    `CREATE INDEX jobs_queue_updated_at ON jobs (queue, updated_at DESC)`,
    // GET /jobs?flowId= and GET /flows/:id.
    `CREATE INDEX jobs_flow_id ON jobs (flow_id, id DESC) WHERE flow_id IS NOT NULL`,
  ],
  // GET /jobs/:id/events and idempotent writes (the writer's ON CONFLICT target).
  job_events: [`ALTER TABLE job_events ADD CONSTRAINT job_events_pkey PRIMARY KEY (job_id, stream_ms, stream_seq)`],
  // GET /jobs/:id/logs and idempotent writes.
  job_logs: [`ALTER TABLE job_logs ADD CONSTRAINT job_logs_pkey PRIMARY KEY (job_id, stream_ms, stream_seq)`],
  // GET /jobs/:id/executions; one row per execution.
  job_executions: [`ALTER TABLE job_executions ADD CONSTRAINT job_executions_pkey PRIMARY KEY (job_id, execution_seq)`],
  // A job's dependencies; one row per edge.
  job_dependencies: [`ALTER TABLE job_dependencies ADD CONSTRAINT job_dependencies_pkey PRIMARY KEY (job_id, depends_on_id)`],
};

/** On the legacy tables (renamed with `_legacy`): the keys and indexes the parents replace. */
const LEGACY_DROPS: Record<string, string[]> = {
  jobs: [`DROP INDEX IF EXISTS jobs_updated_at_legacy`],
  job_events: [`ALTER TABLE job_events_legacy DROP CONSTRAINT IF EXISTS job_events_stream_entry_legacy`, `DROP INDEX IF EXISTS job_events_job_legacy`],
  job_logs: [`ALTER TABLE job_logs_legacy DROP CONSTRAINT IF EXISTS job_logs_stream_entry_legacy`, `DROP INDEX IF EXISTS job_logs_job_legacy`],
};
