import type { DataSource } from 'typeorm';
import type { BackoffSpec } from '../core/backoff';
import { SluiceError } from '../core/errors';
import type { Json } from '../core/job';

/** A schedule row, times as epoch ms (null = not set). */
export interface ScheduleRow {
  id: string;
  name: string;
  cron: string;
  timezone: string;
  queue: string;
  type: string;
  payload: Record<string, Json>;
  priority: number;
  maxAttempts: number | null;
  backoff: BackoffSpec | null;
  timeoutMs: number | null;
  /** The concurrency key of the jobs it enqueues; null = none. */
  concurrencyKey: string | null;
  enabled: boolean;
  nextRunAt: number | null;
  lastRunAt: number | null;
  /** Newest slot claimed by a scheduler. */
  lastSlot: number | null;
  /** Lease end of a claimed slot not yet confirmed enqueued; null once confirmed. */
  claimUntil: number | null;
  lastJobId: string | null;
  revision: number;
  createdAt: number;
  updatedAt: number;
}

/** The definition fields a client sets (POST/PATCH). */
export type ScheduleDefinition = Pick<ScheduleRow, 'name' | 'cron' | 'timezone' | 'queue' | 'type' | 'payload' | 'priority' | 'maxAttempts' | 'backoff' | 'timeoutMs' | 'concurrencyKey' | 'enabled'>;

const COLUMNS = `id, name, cron, timezone, queue, type, payload, priority, max_attempts, backoff, timeout_ms, concurrency_key, enabled,
  next_run_at, last_run_at, last_slot, claim_until, last_job_id, revision, created_at, updated_at`;

const ms = (d: Date | string | null): number | null => (d === null ? null : new Date(d).getTime());
const ts = (t: number | null): Date | null => (t === null ? null : new Date(t));

function toRow(r: Record<string, any>): ScheduleRow {
  return {
    id: r.id,
    name: r.name,
    cron: r.cron,
    timezone: r.timezone,
    queue: r.queue,
    type: r.type,
    payload: r.payload,
    priority: r.priority,
    maxAttempts: r.max_attempts,
    backoff: r.backoff,
    timeoutMs: r.timeout_ms,
    concurrencyKey: r.concurrency_key ?? null,
    enabled: r.enabled,
    nextRunAt: ms(r.next_run_at),
    lastRunAt: ms(r.last_run_at),
    lastSlot: ms(r.last_slot),
    claimUntil: ms(r.claim_until),
    lastJobId: r.last_job_id,
    revision: r.revision,
    createdAt: ms(r.created_at) as number,
    updatedAt: ms(r.updated_at) as number,
  };
}

/** A unique violation on `name` becomes the API's 409. */
function duplicateName(e: unknown, name: string): unknown {
  return (e as { code?: string }).code === '23505' ? new SluiceError('conflict', `a schedule named "${name}" already exists`) : e;
}

/**
 * Every statement on the `schedules` table. Times are passed in from the
 * caller's clock (never Postgres `now()`), so tests can drive time.
 * The slot methods are compare-and-set UPDATEs: whatever the number of
 * scheduler replicas, only one wins a given slot.
 */
export class ScheduleRepository {
  constructor(private readonly db: DataSource) {}

  /**
   * Inserts a schedule of `project` (`d.queue` qualified, of that project).
   * @throws SluiceError `conflict` when the name is taken in the project.
   */
  async insert(id: string, project: string, d: ScheduleDefinition, nextRunAt: number | null, now: number): Promise<ScheduleRow> {
    try {
      const rows = await this.db.query(
        `INSERT INTO schedules (id, name, cron, timezone, queue, type, payload, priority, max_attempts, backoff, timeout_ms, enabled,
           next_run_at, revision, created_at, updated_at, project, concurrency_key)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, 1, $14, $14, $15, $16) RETURNING ${COLUMNS}`,
        [id, d.name, d.cron, d.timezone, d.queue, d.type, JSON.stringify(d.payload), d.priority, d.maxAttempts, d.backoff === null ? null : JSON.stringify(d.backoff), d.timeoutMs, d.enabled, ts(nextRunAt), ts(now), project, d.concurrencyKey],
      );
      return toRow(rows[0]);
    } catch (e) {
      throw duplicateName(e, d.name);
    }
  }

  /** The schedules of `project`, oldest first (index `schedules_project_created`). */
  async list(project: string): Promise<ScheduleRow[]> {
    return (await this.db.query(`SELECT ${COLUMNS} FROM schedules WHERE project = $1 ORDER BY created_at, id`, [project])).map(toRow);
  }

  /** Enabled schedules only (what a scheduler caches). */
  async listEnabled(): Promise<ScheduleRow[]> {
    return (await this.db.query(`SELECT ${COLUMNS} FROM schedules WHERE enabled ORDER BY next_run_at`)).map(toRow);
  }

  /** The schedule `id` (of `project` when given: another project's is null). */
  async get(id: string, project?: string): Promise<ScheduleRow | null> {
    const rows =
      project === undefined
        ? await this.db.query(`SELECT ${COLUMNS} FROM schedules WHERE id = $1`, [id])
        : await this.db.query(`SELECT ${COLUMNS} FROM schedules WHERE id = $1 AND project = $2`, [id, project]);
    return rows.length ? toRow(rows[0]) : null;
  }

  /**
   * Replaces the definition, bumps the revision (a scheduler holding the old
   * one can no longer claim a slot) and sets `next_run_at`. The slot
   * bookkeeping (`last_slot`) is kept, so no slot ever fires twice.
   * @returns null when the schedule does not exist (in `project`).
   * @throws SluiceError `conflict` when the new name is taken in the project.
   */
  async update(id: string, project: string, d: ScheduleDefinition, nextRunAt: number | null, now: number): Promise<ScheduleRow | null> {
    try {
      const rows = await this.db.query(
        `UPDATE schedules SET name = $2, cron = $3, timezone = $4, queue = $5, type = $6, payload = $7, priority = $8,
           max_attempts = $9, backoff = $10, timeout_ms = $11, enabled = $12, next_run_at = $13,
           revision = revision + 1, updated_at = $14, concurrency_key = $16
         WHERE id = $1 AND project = $15 RETURNING ${COLUMNS}`,
        [id, d.name, d.cron, d.timezone, d.queue, d.type, JSON.stringify(d.payload), d.priority, d.maxAttempts, d.backoff === null ? null : JSON.stringify(d.backoff), d.timeoutMs, d.enabled, ts(nextRunAt), ts(now), project, d.concurrencyKey],
      );
      return rows[0]?.[0] ? toRow(rows[0][0]) : null;
    } catch (e) {
      throw duplicateName(e, d.name);
    }
  }

  /** @returns the deleted row, or null when it did not exist (in `project`). */
  async delete(id: string, project: string): Promise<ScheduleRow | null> {
    const rows = await this.db.query(`DELETE FROM schedules WHERE id = $1 AND project = $2 RETURNING ${COLUMNS}`, [id, project]);
    return rows[0]?.[0] ? toRow(rows[0][0]) : null;
  }

  /**
   * Claims slot `slot` (epoch ms) of revision `revision` for this scheduler:
   * succeeds only while the schedule exists, is enabled, has not changed,
   * is due at that slot (`next_run_at <= slot`) and has never claimed this
   * or a later slot. Sets `next_run_at` to `next` and a lease until
   * `claimUntil`, so a replica can retry the enqueue if this one dies.
   * @returns the claim outcome; `stale` means the caller's copy is outdated.
   */
  async claimSlot(id: string, revision: number, slot: number, next: number | null, claimUntil: number): Promise<'won' | 'lost' | 'stale'> {
    const rows = await this.db.query(
      `UPDATE schedules SET last_slot = $3, next_run_at = $4, claim_until = $5
       WHERE id = $1 AND revision = $2 AND enabled AND next_run_at <= $3 AND (last_slot IS NULL OR last_slot < $3)
       RETURNING id`,
      [id, revision, ts(slot), ts(next), ts(claimUntil)],
    );
    if (rows[0]?.length) return 'won';
    const cur = await this.get(id);
    return !cur || cur.revision !== revision || !cur.enabled ? 'stale' : 'lost';
  }

  /**
   * Takes over a claimed slot whose lease ran out before it was confirmed
   * (the claimer died or its enqueue failed): extends the lease to
   * `claimUntil` if it is still expired at `now`.
   */
  async retakeClaim(id: string, revision: number, slot: number, now: number, claimUntil: number): Promise<boolean> {
    const rows = await this.db.query(
      `UPDATE schedules SET claim_until = $5
       WHERE id = $1 AND revision = $2 AND enabled AND last_slot = $3 AND claim_until IS NOT NULL AND claim_until <= $4
       RETURNING id`,
      [id, revision, ts(slot), ts(now), ts(claimUntil)],
    );
    return rows[0]?.length > 0;
  }

  /** Records that slot `slot` was enqueued (job `jobId`, null when an earlier enqueue holds its key). */
  async confirmSlot(id: string, slot: number, jobId: string | null, now: number): Promise<void> {
    await this.db.query(
      `UPDATE schedules SET claim_until = NULL, last_run_at = $4, last_job_id = COALESCE($3, last_job_id)
       WHERE id = $1 AND last_slot = $2`,
      [id, ts(slot), jobId, ts(now)],
    );
  }

  /** After a failed enqueue: lets any scheduler retry slot `slot` from `retryAt`. */
  async releaseClaim(id: string, slot: number, retryAt: number): Promise<void> {
    await this.db.query(`UPDATE schedules SET claim_until = $3 WHERE id = $1 AND last_slot = $2 AND claim_until IS NOT NULL`, [id, ts(slot), ts(retryAt)]);
  }
}
