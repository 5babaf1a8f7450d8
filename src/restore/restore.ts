import { randomBytes } from 'node:crypto';
import type { JobRow as HistoryJobRow } from '../history/common';
import { hostname } from 'node:os';
import type { DataSource } from 'typeorm';
import { DEFAULT_BACKOFF, encodeBackoff } from '../core/backoff';
import type { QueueOwnership, QueueStore, RestoreJobInput, RestoreJobsResult, RestoreStore } from '../core/ports';
import { silentLogger as silent, type Logger } from '../core/logger';
import { sleep } from '../core/sleep';
import { readFlowFields } from '../history/flows';
import { FlowRestorer, type FlowRestoreCounts, type FlowRestoreStores } from './flow-restore';

/**
 * Restore: rebuilds a queue's Redis state from PostgreSQL after Redis lost it
 * (DESIGN.md: "Because Postgres holds every non-terminal job, Redis can be
 * rebuilt from it"). Framework-free; used by `npm run restore`
 * (scripts/restore.js), by the audit role's start-up check and by the audit
 * writer each time it takes a queue over.
 *
 * Detection: every queue has an epoch marker in Redis (`<prefix>:{<queue>}:epoch`)
 * and a row in PostgreSQL's `queues` table. A queue PostgreSQL knows (a
 * `queues` row, non-terminal jobs or dead-letter entries) whose marker is
 * missing has lost its Redis data. A queue PostgreSQL does not know gets a new
 * epoch (marker + row): that is how the marker is "written when the queue is
 * first used".
 *
 * Restoring one queue (holding the queue's mirror lock, so no mirror writer
 * mirrors it meanwhile and PostgreSQL's view of the queue stays still):
 * - first, the record of each unfinished flow with a job in the queue is
 *   rebuilt from PostgreSQL, or brought up to date when Redis kept it
 *   (src/restore/flow-restore.ts), so an outcome of a restored job always
 *   finds its flow's record;
 * - non-terminal jobs (`jobs` rows waiting, delayed, active, blocked) are sent to
 *   lua/restoreJobs-8.lua in chunks, in their original sequence order: the
 *   order of their latest `enqueued` / `retried_from_dlq` events in the
 *   stream (each of those scripts takes the next sequence number and appends
 *   the event in one atomic step, so stream order is sequence order). Waiting
 *   jobs come back waiting in that order within their priority; delayed jobs
 *   come back delayed with their runAt; active jobs come back waiting with
 *   their attempt refunded and a `stalled` event (reason `restored`) that the
 *   history mirror records (or `cancelled` when a cancel request was pending);
 *   blocked jobs (of flows) come back blocked. Every flow job keeps its flow
 *   fields (fl, fp, rf, dp: `dp` rebuilt from `job_dependencies`).
 * - dead-letter jobs (`dead_letter_jobs`, completed by their `jobs` row when
 *   it still exists) come back as `failed` hashes in the DLQ set, so DLQ
 *   retries work.
 * - the last call sets the epoch marker; then the `queues` row is updated and
 *   the queue is put back in the queue registry (workers serving `*` find it).
 *   Just before that last call, the flows' dependents the records free are
 *   unblocked, and `cancel` dependents of a failed dependency cancelled,
 *   once (not while the queue is fenced after a reset: the restore watch
 *   does it once it checked the queue, {@link QueueRestorer.releaseFlows}).
 * Idempotent: the script never touches a job whose hash exists and refuses to
 * run once the marker is set, so a second run restores nothing.
 *
 * Queue settings and key overrides are given back before any queue's jobs
 * (src/queues/settings-keeper.ts, from the restore watch's registries step).
 * Not restored: idempotency keys (the request body hash is not in
 * PostgreSQL), completed and cancelled jobs (served from PostgreSQL), logs
 * and progress of active jobs.
 */

const NON_TERMINAL = ['waiting', 'delayed', 'active', 'blocked'];
/** The same, as an SQL list. */
const NON_TERMINAL_SQL = `('waiting', 'delayed', 'active', 'blocked')`;
const ms = (col: string) => `round(extract(epoch FROM ${col}) * 1000)::bigint`;
const ZERO_UUID = '00000000-0000-0000-0000-000000000000';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Ids per PostgreSQL lookup and prune call when a reset queue is pruned. */
const PRUNE_CHUNK = 1000;

export interface RestoreCounts {
  waiting: number;
  delayed: number;
  /** Jobs that were active and came back waiting (with a `stalled` event). */
  active: number;
  /** Dead-letter jobs put back in the DLQ set. */
  failed: number;
  /** Active jobs with a pending cancel request, ended cancelled. */
  cancelled: number;
  /** Jobs PostgreSQL listed that Redis already held (left untouched). */
  skipped: number;
  /** Flow jobs that came back blocked (waiting for their dependencies). */
  blocked: number;
}

/** What the restore did to the unfinished flows with a job in the queue. */
export interface FlowRestoreReport extends FlowRestoreCounts {
  /** Dependents unblocked (their dependencies all met while Redis was down). */
  released: number;
  /** `cancel` dependents of a failed dependency cancelled (reason dependency_failed). */
  cancelled: number;
}

export interface QueueRestoreReport {
  queue: string;
  /**
   * intact: the marker exists, nothing to do; created: a queue PostgreSQL did
   * not know, new epoch recorded; restored: Redis state rebuilt; planned: a
   * dry run found the state lost (counts = what would be restored); busy:
   * another process holds the queue's mirror lock; error: see `error`.
   */
  action: 'intact' | 'created' | 'restored' | 'planned' | 'busy' | 'error';
  epoch: string | null;
  counts: RestoreCounts;
  /** Jobs of a reset (rewound) queue removed before the restore because PostgreSQL knew them (src/restore/loss-watch.ts). */
  pruned?: number;
  /** Flows rebuilt with the queue (absent when no unfinished flow has a job there). */
  flows?: FlowRestoreReport;
  error?: string;
}

export interface RestoreOptions {
  /** Jobs per script call (one atomic step each). Default 500. */
  chunkSize?: number;
  /** The mirror lock's lease while restoring, renewed by every chunk. Default 30000 ms. */
  lockTtlMs?: number;
  /** How long to wait for a queue's mirror lock held by someone else. Default 15000 ms. */
  lockWaitMs?: number;
  /**
   * Restore a queue's jobs only once Redis holds the installation marker (the
   * registries: keys, projects, queue settings were given back first,
   * src/restore/loss-watch.ts), so a job of an external queue never comes back
   * into a queue that is not external yet. Set by the audit role.
   */
  registriesFirst?: boolean;
  log?: Logger;
}

/** A `jobs` row as the restore query selects it (times as text ms). */
type JobRow = Pick<
  HistoryJobRow,
  'id' | 'status' | 'type' | 'payload' | 'priority' | 'attempts' | 'max_attempts' | 'backoff' | 'timeout_ms' | 'idempotency_key' | 'concurrency_key' | 'last_error' | 'worker_id' | 'execution_seq'
> & { ca: string; ra: string; sa: string | null; ua: string };

interface DlqRow {
  id: string;
  type: string;
  payload: string;
  last_error: string | null;
  attempts: number;
  fa: string;
  priority: number | null;
  max_attempts: number | null;
  backoff: string | null;
  timeout_ms: number | null;
  idempotency_key: string | null;
  concurrency_key: string | null;
  worker_id: string | null;
  execution_seq: number | null;
  ca: string | null;
  ra: string | null;
  sa: string | null;
}

const zero = (): RestoreCounts => ({
  waiting: 0,
  delayed: 0,
  active: 0,
  failed: 0,
  cancelled: 0,
  skipped: 0,
  blocked: 0,
});
const numOrNull = (v: string | null) => (v === null ? null : Number(v));

/** A new epoch value: time of creation plus randomness (unique across restores). */
export function newEpoch(): string {
  return `${Date.now()}-${randomBytes(6).toString('hex')}`;
}

/** "ms-seq" of the larger of two stream ids (either may be null). */
function maxStreamId(a: string | null, b: string | null): string | null {
  if (!a) return b;
  if (!b) return a;
  const [am, as] = a.split('-').map(BigInt);
  const [bm, bs] = b.split('-').map(BigInt);
  return am > bm || (am === bm && as >= bs) ? a : b;
}

/** The stores a restore uses (a RedisStores from createRedisStores fits). */
export interface RestoreStores extends FlowRestoreStores {
  queues: QueueStore;
  restore: RestoreStore;
  ownership: QueueOwnership;
}

export class QueueRestorer {
  private readonly log: Logger;
  private readonly flowRestorer: FlowRestorer;

  constructor(
    private readonly db: DataSource,
    private readonly stores: RestoreStores,
    private readonly opts: RestoreOptions = {},
  ) {
    this.log = opts.log ?? silent;
    this.flowRestorer = new FlowRestorer(db, stores, this.log);
  }

  /**
   * Rebuilds (idempotently) the records of the unfinished flows with a job
   * in `queue` and makes the moves they decide: for a queue the restore
   * watch reset, once it checked it (the fence refuses moves before).
   * @throws when PostgreSQL or Redis fail.
   */
  async releaseFlows(queue: string): Promise<FlowRestoreReport> {
    const { counts, plan } = await this.flowRestorer.rebuild(queue);
    return { ...counts, ...(await this.flowRestorer.release(plan)) };
  }

  /**
   * Every queue Redis's registry or PostgreSQL knows, sorted: PostgreSQL's
   * through the queue table, the live counts (job_counts, exact: no scan
   * of jobs) and the dead-letter queue.
   */
  async listQueues(): Promise<string[]> {
    const [registry, rows] = await Promise.all([
      this.stores.queues.list(),
      this.db.query(
        `SELECT name FROM queues
         UNION SELECT queue FROM job_counts WHERE status IN ${NON_TERMINAL_SQL} AND n > 0
         UNION SELECT DISTINCT queue FROM dead_letter_jobs`,
      ) as Promise<{ name: string }[]>,
    ]);
    return [...new Set([...registry, ...rows.map((r) => r.name)])].sort();
  }

  /**
   * The restore check over every known queue (or `only`): restores the
   * queues whose Redis state is lost, records epochs of the others. A failure
   * on one queue is reported and the others go on.
   */
  async checkAll(opts: { dryRun?: boolean; only?: string[] } = {}): Promise<QueueRestoreReport[]> {
    const queues = opts.only?.length ? opts.only : await this.listQueues();
    const out: QueueRestoreReport[] = [];
    for (const q of queues) {
      try {
        out.push(await this.ensureQueue(q, { dryRun: opts.dryRun }));
      } catch (e) {
        this.log.error({ queue: q, err: (e as Error).message }, 'restore failed');
        out.push({
          queue: q,
          action: 'error',
          epoch: null,
          counts: zero(),
          error: (e as Error).message,
        });
      }
    }
    return out;
  }

  /**
   * Checks one queue's epoch marker and acts on it (see the file comment).
   * @param opts.lockToken the caller already holds the queue's mirror lock with
   *   this value (an mirror writer taking the queue over); else the lock is
   *   taken for the restore and released after it.
   * @throws when Redis or PostgreSQL fail (a partial restore is completed by the next run).
   */
  async ensureQueue(
    queue: string,
    opts: { lockToken?: string; dryRun?: boolean } = {},
  ): Promise<QueueRestoreReport> {
    const marker = await this.stores.restore.epoch(queue);
    if (marker !== null) {
      if (!opts.dryRun) await this.recordEpoch(queue, marker);
      return { queue, action: 'intact', epoch: marker, counts: zero() };
    }
    const [{ known }] = (await this.db.query(
      `SELECT EXISTS (SELECT 1 FROM queues WHERE name = $1)
           OR EXISTS (SELECT 1 FROM jobs WHERE queue = $1 AND status IN ${NON_TERMINAL_SQL})
           OR EXISTS (SELECT 1 FROM dead_letter_jobs WHERE queue = $1) AS known`,
      [queue],
    )) as { known: boolean }[];
    if (!known) {
      if (opts.dryRun) return { queue, action: 'created', epoch: null, counts: zero() };
      const epoch = newEpoch();
      if (!(await this.stores.restore.createEpoch(queue, epoch))) return this.ensureQueue(queue, opts);
      await this.recordEpoch(queue, epoch);
      await this.stores.restore.relist(queue);
      // Checked from its first moment: a snapshot taken from now on holds the
      // restore fence (src/restore/loss-watch.ts), however soon it is taken.
      await this.stores.restore.verify(queue, epoch, null);
      this.log.info({ queue, epoch }, 'queue epoch created');
      return { queue, action: 'created', epoch, counts: zero() };
    }
    if (opts.dryRun)
      return { queue, action: 'planned', epoch: null, counts: await this.plannedCounts(queue) };
    if (this.opts.registriesFirst && !(await this.stores.restore.state()).installed)
      throw new Error(`queue ${queue} is restored once the registries (keys, projects, queue settings) are back`);
    return this.restoreQueue(queue, opts.lockToken);
  }

  /** Records the Redis epoch in PostgreSQL (insert, or update with a warning when they differ). */
  private async recordEpoch(queue: string, epoch: string): Promise<void> {
    const r = (await this.db.query(
      `WITH prev AS (SELECT epoch FROM queues WHERE name = $1)
       INSERT INTO queues (name, epoch) VALUES ($1, $2)
       ON CONFLICT (name) DO UPDATE SET epoch = EXCLUDED.epoch WHERE queues.epoch <> EXCLUDED.epoch
       RETURNING (SELECT epoch FROM prev) AS previous`,
      [queue, epoch],
    )) as { previous: string | null }[];
    if (r.length && r[0].previous !== null) {
      this.log.warn(
        { queue, redisEpoch: epoch, postgresEpoch: r[0].previous },
        'queue epoch in Redis differs from PostgreSQL: recorded the Redis one',
      );
    }
  }

  private async plannedCounts(queue: string): Promise<RestoreCounts> {
    const c = zero();
    const rows = (await this.db.query(
      `SELECT status, count(*)::int AS n FROM jobs WHERE queue = $1 AND status IN ${NON_TERMINAL_SQL} GROUP BY status`,
      [queue],
    )) as { status: 'waiting' | 'delayed' | 'active' | 'blocked'; n: number }[];
    for (const r of rows) c[r.status] = r.n;
    const [{ n }] = (await this.db.query(
      `SELECT count(*)::int AS n FROM dead_letter_jobs WHERE queue = $1`,
      [queue],
    )) as { n: number }[];
    c.failed = n;
    return c;
  }

  /** Takes the queue's mirror lock; 'intact' when someone else restored it meanwhile. */
  private async acquire(queue: string, token: string): Promise<'held' | 'intact' | 'busy'> {
    const deadline = Date.now() + (this.opts.lockWaitMs ?? 15_000);
    for (;;) {
      if ((await this.stores.restore.epoch(queue)) !== null) return 'intact';
      if (await this.stores.ownership.take(queue, token, this.opts.lockTtlMs ?? 30_000)) return 'held';
      if (Date.now() >= deadline) return 'busy';
      await sleep(200);
    }
  }

  private async release(queue: string, token: string): Promise<void> {
    await this.stores.ownership.release(queue, token);
  }

  private async restoreQueue(queue: string, heldToken?: string): Promise<QueueRestoreReport> {
    const token =
      heldToken ?? `restore-${hostname()}-${process.pid}-${randomBytes(4).toString('hex')}`;
    if (!heldToken) {
      const got = await this.acquire(queue, token);
      if (got === 'intact') return this.ensureQueue(queue);
      if (got === 'busy') {
        const holder = await this.stores.ownership.holder(queue);
        return {
          queue,
          action: 'busy',
          epoch: null,
          counts: zero(),
          error: `the queue's audit lock is held by ${holder}`,
        };
      }
    }
    try {
      const started = Date.now();
      const counts = zero();
      const lock = { token, ttlMs: this.opts.lockTtlMs ?? 30_000 };
      const chunk = this.opts.chunkSize ?? 500;

      // Sequence order: the stream position of each job's latest enqueued / retried_from_dlq event.
      const order = (await this.db.query(
        `SELECT j.id, j.last_event_ms::text AS lm, j.last_event_seq::text AS ls
         FROM jobs j
         LEFT JOIN LATERAL (
           SELECT e.stream_ms, e.stream_seq FROM job_events e
           WHERE e.job_id = j.id AND e.event IN ('enqueued', 'retried_from_dlq')
           ORDER BY e.stream_ms DESC, e.stream_seq DESC LIMIT 1
         ) o ON true
         WHERE j.queue = $1 AND j.status IN ${NON_TERMINAL_SQL}
         ORDER BY o.stream_ms, o.stream_seq, j.created_at, j.id`,
        [queue],
      )) as { id: string; lm: string; ls: string }[];

      // New events must sort after everything PostgreSQL holds for the queue
      // (a replacement Redis may have a clock behind the old one's).
      const [top] = (await this.db.query(
        `SELECT stream_ms::text AS m, stream_seq::text AS s FROM queue_stream_tops WHERE queue = $1`,
        [queue],
      )) as { m: string; s: string }[];
      // A queue reset by the restore watch (Redis rewound to an older
      // snapshot): the snapshot's copies of jobs PostgreSQL knows go first,
      // so each comes back in PostgreSQL's state — also when the reset was
      // interrupted and this is another process's restore.
      const resetting = await this.stores.restore.resetting(queue);
      const pruned = resetting ? await this.pruneKnown(queue, lock) : 0;
      // Flow records before any job of the queue can run and end (its outcome then finds its record).
      const flows = await this.flowRestorer.rebuild(queue, () => this.stores.ownership.renew(queue, token, lock.ttlMs));
      let minStreamId: string | null = top ? `${top.m}-${top.s}` : null;
      for (const r of order) minStreamId = maxStreamId(minStreamId, `${r.lm}-${r.ls}`);
      const call = async (jobs: RestoreJobInput[], epoch = ''): Promise<RestoreJobsResult> => {
        const r = await this.stores.restore.restoreJobs(queue, lock, { epoch, minStreamId: minStreamId ?? '' }, jobs);
        if (r.status === 'ok')
          for (const key of Object.keys(counts) as (keyof RestoreCounts)[]) counts[key] += r[key];
        return r;
      };

      let stopped: RestoreJobsResult | null = null;
      for (let i = 0; i < order.length && !stopped; i += chunk) {
        const ids = order.slice(i, i + chunk).map((r) => r.id);
        const jobs = await this.readJobs(queue, ids);
        const r = await call(jobs);
        if (r.status !== 'ok') stopped = r;
      }
      let after = ZERO_UUID;
      while (!stopped) {
        const rows = await this.readDeadLetters(queue, after, chunk);
        if (!rows.length) break;
        after = rows[rows.length - 1].failedId;
        const r = await call(rows.map((x) => x.job));
        if (r.status !== 'ok') stopped = r;
        if (rows.length < chunk) break;
      }
      // The flows' moves before the marker: one that fails leaves the queue to restore again (each step idempotent).
      // A reset queue is fenced until the restore watch checked it: it releases them then (releaseFlows).
      const moved = stopped || resetting ? { released: 0, cancelled: 0 } : await this.flowRestorer.release(flows.plan);
      const epoch = newEpoch();
      if (!stopped) {
        const r = await call([], epoch);
        if (r.status !== 'ok') stopped = r;
      }
      if (stopped) {
        if (stopped.status === 'already_restored') return this.ensureQueue(queue);
        throw new Error(
          `restore of queue ${queue} stopped: the audit lock was lost (another process took the queue over); run the restore again`,
        );
      }
      await this.db.query(
        `INSERT INTO queues (name, epoch, restored_at, restores) VALUES ($1, $2, now(), 1)
         ON CONFLICT (name) DO UPDATE SET epoch = EXCLUDED.epoch, restored_at = now(), restores = queues.restores + 1`,
        [queue, epoch],
      );
      await this.stores.restore.relist(queue);
      const flowReport: FlowRestoreReport = { ...flows.counts, ...moved };
      this.log.debug(
        { queue, epoch, ...counts, flows: flowReport, ms: Date.now() - started },
        'queue restored from PostgreSQL',
      );
      const report: QueueRestoreReport = { queue, action: 'restored', epoch, counts };
      if (pruned) report.pruned = pruned;
      if (flowReport.flows) report.flows = flowReport;
      return report;
    } finally {
      if (!heldToken) await this.release(queue, token);
    }
  }

  /**
   * Removes from a reset queue every job PostgreSQL knows (its state there is
   * newer than the snapshot's), under the queue's lock. Jobs PostgreSQL never
   * heard of (accepted after Redis came back) stay.
   * @returns hashes removed.
   * @throws when the lock was lost meanwhile (the next restore prunes again).
   */
  private async pruneKnown(queue: string, lock: { token: string; ttlMs: number }): Promise<number> {
    const ids = (await this.stores.restore.jobIds(queue)).filter((id) => UUID.test(id));
    let n = 0;
    for (let i = 0; i < ids.length; i += PRUNE_CHUNK) {
      const chunk = ids.slice(i, i + PRUNE_CHUNK);
      const known = (await this.db.query(
        `SELECT id::text AS id FROM jobs WHERE id = ANY($1::uuid[]) UNION SELECT job_id::text FROM dead_letter_jobs WHERE job_id = ANY($1::uuid[])`,
        [chunk],
      )) as { id: string }[];
      if (!known.length) continue;
      const removed = await this.stores.restore.prune(queue, lock, known.map((r) => r.id));
      if (removed < 0) throw new Error(`restore of queue ${queue} stopped: the audit lock was lost while pruning; run the restore again`);
      n += removed;
    }
    return n;
  }

  /** Full rows of non-terminal jobs, in the order of `ids`; active jobs with a pending cancel become 'cancel'. */
  private async readJobs(queue: string, ids: string[]): Promise<RestoreJobInput[]> {
    const rows = (await this.db.query(
      `SELECT id, status, type, payload, priority, attempts, max_attempts, backoff, timeout_ms, idempotency_key, concurrency_key, last_error, worker_id,
              execution_seq, ${ms('created_at')} AS ca, ${ms('run_at')} AS ra, ${ms('started_at')} AS sa, ${ms('updated_at')} AS ua
       FROM jobs WHERE id = ANY($1::uuid[]) AND queue = $2 AND status IN ${NON_TERMINAL_SQL}`,
      [ids, queue],
    )) as JobRow[];
    const flows = await readFlowFields(this.db, ids);
    const byId = new Map(rows.map((r) => [r.id, r]));
    const active = rows.filter((r) => r.status === 'active').map((r) => r.id);
    const cancel = new Set<string>();
    if (active.length) {
      // A cancel request not followed by a retry from the DLQ is still pending.
      const c = (await this.db.query(
        `SELECT DISTINCT c.job_id AS id FROM job_events c
         WHERE c.job_id = ANY($1::uuid[]) AND c.event = 'cancel_requested'
           AND NOT EXISTS (SELECT 1 FROM job_events r WHERE r.job_id = c.job_id AND r.event = 'retried_from_dlq'
                           AND (r.stream_ms, r.stream_seq) > (c.stream_ms, c.stream_seq))`,
        [active],
      )) as { id: string }[];
      for (const r of c) cancel.add(r.id);
    }
    const out: RestoreJobInput[] = [];
    for (const id of ids) {
      const r = byId.get(id);
      if (!r || !NON_TERMINAL.includes(r.status)) continue; // changed meanwhile: not ours to restore
      out.push({
        id: r.id,
        kind:
          r.status === 'active'
            ? cancel.has(r.id)
              ? 'cancel'
              : 'active'
            : (r.status as 'waiting' | 'delayed' | 'blocked'),
        type: r.type,
        payload: r.payload,
        priority: r.priority,
        maxAttempts: r.max_attempts,
        timeoutMs: r.timeout_ms,
        backoff: r.backoff,
        attempts: r.attempts,
        executionSeq: r.execution_seq,
        createdAt: Number(r.ca),
        runAt: Number(r.ra),
        idempotencyKey: r.idempotency_key,
        concurrencyKey: r.concurrency_key,
        lastError: r.last_error,
        workerId: r.worker_id,
        startedAt: numOrNull(r.sa),
        failedAt: null,
        updatedAt: Number(r.ua),
        flow: flows.get(r.id) ?? null,
      });
    }
    return out;
  }

  /**
   * One page of the queue's dead-letter jobs after `after` (job id order), completed by their `jobs` row when it still exists.
   * The `jobs` side carries the cursor too: without it a merge join read every job id below the cursor, each page
   * (4.3 s per page deep into 10M partitioned rows; 45 ms with it).
   */
  private async readDeadLetters(
    queue: string,
    after: string,
    limit: number,
  ): Promise<{ failedId: string; job: RestoreJobInput }[]> {
    const rows = (await this.db.query(
      `SELECT d.job_id AS id, d.type, d.payload, d.last_error, d.attempts, ${ms('d.failed_at')} AS fa,
              j.priority, j.max_attempts, j.backoff, j.timeout_ms, j.idempotency_key, j.concurrency_key, j.worker_id, j.execution_seq,
              ${ms('j.created_at')} AS ca, ${ms('j.run_at')} AS ra, ${ms('j.started_at')} AS sa
       FROM dead_letter_jobs d LEFT JOIN jobs j ON j.id = d.job_id AND j.id > $2::uuid
       WHERE d.queue = $1 AND d.job_id > $2::uuid ORDER BY d.job_id LIMIT $3`,
      [queue, after, limit],
    )) as DlqRow[];
    const flows = await readFlowFields(this.db, rows.map((r) => r.id));
    return rows.map((r) => {
      const fa = Number(r.fa);
      return {
        failedId: r.id,
        job: {
          id: r.id,
          kind: 'failed',
          type: r.type,
          payload: r.payload,
          priority: r.priority ?? 0,
          maxAttempts: r.max_attempts ?? Math.max(1, r.attempts),
          timeoutMs: r.timeout_ms ?? 600_000,
          backoff: r.backoff ?? encodeBackoff(DEFAULT_BACKOFF),
          attempts: r.attempts,
          executionSeq: r.execution_seq ?? 0,
          createdAt: numOrNull(r.ca) ?? fa,
          runAt: numOrNull(r.ra) ?? numOrNull(r.ca) ?? fa,
          idempotencyKey: r.idempotency_key,
          concurrencyKey: r.concurrency_key,
          lastError: r.last_error,
          workerId: r.worker_id,
          startedAt: numOrNull(r.sa),
          failedAt: fa,
          updatedAt: fa,
          flow: flows.get(r.id) ?? null,
        },
      };
    });
  }
}

/** One human-readable line per queue report (what `npm run restore` prints). */
export function formatRestoreReport(r: QueueRestoreReport): string {
  const c = r.counts;
  // Blocked (flow) jobs named only when there are some: the line outside flows is unchanged.
  const blocked = c.blocked ? `${c.blocked} blocked, ` : '';
  const f = r.flows;
  const flows = f ? `; ${f.flows} flows (${f.created} records rebuilt, ${f.applied} outcomes applied, ${f.released} dependents released, ${f.cancelled} cancelled${f.lost ? `, ${f.lost} dependencies lost before PostgreSQL had them` : ''}${f.skipped ? `, ${f.skipped} skipped` : ''})` : '';
  const jobs = `${c.waiting} waiting, ${c.delayed} delayed, ${c.active} active (back to waiting, stalled), ${blocked}${c.failed} failed (DLQ), ${c.cancelled} cancelled${flows}`;
  switch (r.action) {
    case 'intact':
      return `${r.queue}: intact (epoch ${r.epoch})`;
    case 'created':
      return r.epoch
        ? `${r.queue}: new queue, epoch ${r.epoch} recorded`
        : `${r.queue}: new queue (an epoch would be recorded)`;
    case 'restored':
      return `${r.queue}: restored ${c.waiting + c.delayed + c.active + c.blocked + c.failed + c.cancelled} jobs: ${jobs}; ${c.skipped} already in Redis (epoch ${r.epoch})`;
    case 'planned':
      return `${r.queue}: Redis lost its state; would restore ${c.waiting} waiting, ${c.delayed} delayed, ${c.active} active, ${blocked}${c.failed} failed (DLQ)`;
    case 'busy':
      return `${r.queue}: not restored: ${r.error}; run again`;
    case 'error':
      return `${r.queue}: restore failed: ${r.error}`;
  }
}
