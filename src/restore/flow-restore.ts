import type { DataSource } from 'typeorm';
import { FLOW_RESTORE_MAX_JOBS, type FlowRecordStore, type FlowRestoreJob, type FlowRestoreStore } from '../core/ports';
import { silentLogger as silent, type Logger } from '../core/logger';
import { projectOf } from '../core/project-queue';

/**
 * Workflows after a Redis loss (docs/workflows.md "PostgreSQL, restore, Redis
 * loss"), the restore's flow side, framework-free:
 * - readFlowFields (src/history/flows.ts): the flow fields (fl, fp, rf, dp) of restored jobs,
 *   so their ends reach the flow outbox and their claims carry dependencies;
 * - {@link FlowRestorer.rebuild}: before a queue's jobs come back, the record
 *   of each unfinished flow (a job waiting, delayed, active or blocked) with
 *   a job in the queue is written from PostgreSQL when Redis lost it, or
 *   given the outcomes Redis can no longer deliver when it kept it
 *   (lua/restoreFlow-1.lua): so an outcome of a restored job always finds its
 *   record, and one lost with the queue's flow outbox is not missed;
 * - {@link FlowRestorer.release}: once the jobs are back, the dependents the
 *   record says are free are unblocked and the `cancel` dependents of a
 *   failed dependency cancelled (lua/moveFlowJobs-7.lua: acts only on a job
 *   still blocked, so a dependent released by the flow worker meanwhile, or
 *   by an earlier restore, is not released twice), and every queue of the
 *   flow is watched again by the flow worker.
 */

/** Job ids per move call (one script step each). */
const MOVE_CHUNK = 500;
/** The queue's lock is renewed every this many flows rebuilt. */
const RENEW_EVERY = 25;
const ms = (col: string) => `round(extract(epoch FROM ${col}) * 1000)::bigint`;
const UNFINISHED = `('waiting', 'delayed', 'active', 'blocked')`;

/** A job's outcome as a flow's record counts it, from its PostgreSQL status. */
export function outcomeOf(status: string): FlowRestoreJob['outcome'] {
  if (status === 'completed') return 'completed';
  if (status === 'failed' || status === 'cancelled') return 'ended';
  return null;
}

/** The moves a rebuild decided, per queue. */
export interface FlowReleasePlan {
  release: Map<string, Set<string>>;
  cancel: Map<string, Set<string>>;
  /** Every queue holding a job of a rebuilt flow (watched again by the flow worker). */
  queues: Set<string>;
}

/** What a queue's flow restore did. */
export interface FlowRestoreCounts {
  /** Unfinished flows with a job in the queue. */
  flows: number;
  /** Records written anew from PostgreSQL. */
  created: number;
  /** Outcomes applied to records. */
  applied: number;
  /** Flows skipped: over 10,000 jobs, or none readable (logged). */
  skipped: number;
}

export interface FlowRestoreStores {
  flowRestore: FlowRestoreStore;
  flows: Pick<FlowRecordStore, 'move' | 'watch'>;
}

interface FlowJobRow {
  id: string;
  queue: string;
  status: string;
  pol: string | null;
  ref: string | null;
  ca: string;
  deps: string[];
}

export class FlowRestorer {
  constructor(
    private readonly db: DataSource,
    private readonly stores: FlowRestoreStores,
    private readonly log: Logger = silent,
  ) {}

  /**
   * Rebuilds (or brings up to date) the record of every unfinished flow (a
   * job waiting, delayed, active or blocked anywhere) with a job in `queue`:
   * one PostgreSQL query over the unfinished flow jobs, then one per flow.
   * @param renew called every {@link RENEW_EVERY} flows (the queue's lock); false stops the rebuild.
   * @returns the counts and the moves to make once the queue's jobs are back.
   * @throws when PostgreSQL or Redis fail, or `renew` answers false (the next restore rebuilds again: idempotent).
   */
  async rebuild(queue: string, renew: () => Promise<boolean> = async () => true): Promise<{ counts: FlowRestoreCounts; plan: FlowReleasePlan }> {
    const counts: FlowRestoreCounts = { flows: 0, created: 0, applied: 0, skipped: 0 };
    const plan: FlowReleasePlan = { release: new Map(), cancel: new Map(), queues: new Set() };
    // Unfinished flows (at most one id per live flow job) with a job in the queue: jobs
    // still to run there, or ended there with an outcome the flow may still need.
    const flows = (await this.db.query(
      `WITH f AS (SELECT DISTINCT flow_id FROM jobs WHERE status IN ${UNFINISHED} AND flow_id IS NOT NULL)
       SELECT f.flow_id::text AS f FROM f WHERE EXISTS (SELECT 1 FROM jobs j WHERE j.flow_id = f.flow_id AND j.queue = $1)
       ORDER BY 1`,
      [queue],
    )) as { f: string }[];
    for (const { f } of flows) {
      if (counts.flows > 0 && counts.flows % RENEW_EVERY === 0 && !(await renew()))
        throw new Error(`flow restore of queue ${queue} stopped: the queue's lock was lost; run the restore again`);
      counts.flows++;
      await this.rebuildFlow(queue, f, counts, plan);
    }
    return { counts, plan };
  }

  private async rebuildFlow(queue: string, flowId: string, counts: FlowRestoreCounts, plan: FlowReleasePlan): Promise<void> {
    const rows = (await this.db.query(
      `SELECT j.id::text AS id, j.queue, j.status, j.on_dependency_failure AS pol, j.flow_ref AS ref, ${ms('j.created_at')}::text AS ca,
              coalesce((SELECT array_agg(d.depends_on_id::text ORDER BY d.depends_on_id) FROM job_dependencies d WHERE d.job_id = j.id), '{}') AS deps
       FROM jobs j WHERE j.flow_id = $1::uuid ORDER BY j.id LIMIT $2`,
      [flowId, FLOW_RESTORE_MAX_JOBS + 1],
    )) as FlowJobRow[];
    if (!rows.length || rows.length > FLOW_RESTORE_MAX_JOBS) {
      counts.skipped++;
      this.log.warn({ queue, flowId, jobs: rows.length }, `flow not restored: ${rows.length ? 'over' : 'no job of it in'} the history's bound of ${FLOW_RESTORE_MAX_JOBS} jobs`);
      return;
    }
    const known = new Set(rows.map((r) => r.id));
    // Ended jobs of other queues: PostgreSQL's outcome stands unless Redis holds the job in another state (a DLQ retry not mirrored yet).
    const ended = rows.filter((r) => r.queue !== queue && outcomeOf(r.status) !== null);
    const inRedis = await this.stores.flowRestore.statuses(ended.map((r) => ({ queue: r.queue, id: r.id })));
    const otherwise = new Set(ended.filter((r, i) => inRedis[i] !== null && outcomeOf(inRedis[i]!) !== outcomeOf(r.status)).map((r) => r.id));
    let pruned = 0;
    const jobs: FlowRestoreJob[] = rows.map((r) => {
      // A dependency the history no longer holds was finished and pruned by retention: it counts as met.
      const dependsOn = r.deps.filter((d) => known.has(d));
      pruned += r.deps.length - dependsOn.length;
      return {
        id: r.id,
        queue: r.queue,
        onDependencyFailure: r.pol === 'run' ? 'run' : 'cancel',
        dependsOn,
        ref: r.ref,
        outcome: outcomeOf(r.status),
        authoritative: r.queue === queue || !otherwise.has(r.id),
      };
    });
    if (pruned) this.log.warn({ queue, flowId, dependencies: pruned }, 'flow restore: dependencies pruned from the history count as met');
    const createdAt = Math.min(...rows.map((r) => Number(r.ca)));
    const r = await this.stores.flowRestore.rebuild(flowId, projectOf(rows[0].queue), createdAt, jobs);
    if (r.created) counts.created++;
    counts.applied += r.applied;
    const add = (m: Map<string, Set<string>>, refs: { queue: string; id: string }[]) => {
      for (const x of refs) m.set(x.queue, (m.get(x.queue) ?? new Set()).add(x.id));
    };
    add(plan.release, r.release);
    add(plan.cancel, r.cancel);
    for (const j of rows) plan.queues.add(j.queue);
  }

  /**
   * Carries out a rebuild's plan: the flow worker watches each queue again,
   * then dependents are unblocked and cancelled (a no-op on a job not blocked,
   * or in a queue fenced until the restore watch checked it).
   * @returns the jobs moved.
   */
  async release(plan: FlowReleasePlan): Promise<{ released: number; cancelled: number }> {
    for (const q of plan.queues) await this.stores.flows.watch(q);
    const run = async (op: 'unblock' | 'cancel', m: Map<string, Set<string>>) => {
      let n = 0;
      for (const [q, set] of m) {
        const ids = [...set];
        for (let i = 0; i < ids.length; i += MOVE_CHUNK) n += (await this.stores.flows.move(q, op, ids.slice(i, i + MOVE_CHUNK))).length;
      }
      return n;
    };
    return { released: await run('unblock', plan.release), cancelled: await run('cancel', plan.cancel) };
  }
}
