import type { DataSource } from 'typeorm';
import { FLOW_RESTORE_MAX_JOBS, type FlowRecordStore, type FlowRestoreJob, type FlowRestoreStore } from '../core/ports';
import { silentLogger as silent, type Logger } from '../core/logger';
import { projectOf } from '../core/project-queue';
import { UnavailableError } from '../core/errors';

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
/** Flows whose moves are read at once (one lua/flowMoves-1.lua call each). */
const MOVES_AT_ONCE = 50;
/**
 * The shortest history retention (RETENTION_DAYS ≥ 1), ms: retention deletes
 * only jobs whose id (UUIDv7: creation ms) is older than now − RETENTION_DAYS
 * (src/maintenance/retention.ts), so a job younger than this was never pruned.
 */
const MIN_RETENTION_MS = 86_400_000;
const ms = (col: string) => `round(extract(epoch FROM ${col}) * 1000)::bigint`;
const UNFINISHED = `('waiting', 'delayed', 'active', 'blocked')`;

/** A job's outcome as a flow's record counts it, from its PostgreSQL status. */
export function outcomeOf(status: string): FlowRestoreJob['outcome'] {
  if (status === 'completed') return 'completed';
  if (status === 'failed' || status === 'cancelled') return 'ended';
  return null;
}

/**
 * Whether retention may have pruned a job of this id: its id sorts below the
 * UUIDv7 of `now` − {@link MIN_RETENTION_MS} (retention's own test, at its
 * shortest setting). A job PostgreSQL does not know that could not have been
 * pruned was never mirrored.
 */
export function mayBePruned(id: string, now = Date.now()): boolean {
  const cutoff = Math.max(0, now - MIN_RETENTION_MS).toString(16).padStart(12, '0');
  return id.replace(/-/g, '').slice(0, 12).toLowerCase() < cutoff;
}

/** What a rebuild decided: its flows' moves are read once the queue's jobs are back (lua/flowMoves-1.lua). */
export interface FlowReleasePlan {
  /** The flows rebuilt (their records exist). */
  flows: Set<string>;
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
  /**
   * Dependencies neither PostgreSQL nor Redis holds, too young for retention
   * to have pruned them: lost with Redis before the mirror wrote them. Each
   * counts as ended without completing (logged).
   */
  lost: number;
}

export interface FlowRestoreStores {
  flowRestore: FlowRestoreStore;
  flows: Pick<FlowRecordStore, 'move' | 'watch'>;
}

/** One edge of a flow job as the history holds it: the dependency's id, its ref and (edges mirrored since 1796002050000) queue. */
interface Edge {
  id: string;
  ref: string;
  queue: string | null;
}

interface FlowJobRow {
  id: string;
  queue: string;
  status: string;
  pol: string | null;
  ref: string | null;
  ca: string;
  deps: Edge[];
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
    const counts: FlowRestoreCounts = { flows: 0, created: 0, applied: 0, skipped: 0, lost: 0 };
    const plan: FlowReleasePlan = { flows: new Set(), queues: new Set() };
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
              coalesce((SELECT json_agg(json_build_object('id', d.depends_on_id::text, 'ref', d.ref, 'queue', d.queue) ORDER BY d.depends_on_id)
                        FROM job_dependencies d WHERE d.job_id = j.id), '[]'::json) AS deps
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
    const { extra, pruned } = await this.unknownDependencies(rows, known);
    const jobs: FlowRestoreJob[] = rows.map((r) => ({
      id: r.id,
      queue: r.queue,
      onDependencyFailure: r.pol === 'run' ? 'run' : 'cancel',
      // A dependency retention pruned finished long ago: it counts as met, as before.
      dependsOn: r.deps.map((d) => d.id).filter((d) => !pruned.has(d)),
      ref: r.ref,
      outcome: outcomeOf(r.status),
      authoritative: r.queue === queue || !otherwise.has(r.id),
    }));
    if (jobs.length + extra.length > FLOW_RESTORE_MAX_JOBS) {
      counts.skipped++;
      this.log.warn({ queue, flowId, jobs: jobs.length + extra.length }, `flow not restored: over the record's bound of ${FLOW_RESTORE_MAX_JOBS} jobs`);
      return;
    }
    const lost = extra.filter((j) => j.outcome === 'ended' && j.authoritative);
    if (pruned.size) this.log.warn({ queue, flowId, dependencies: pruned.size }, 'flow restore: dependencies pruned from the history count as met');
    if (lost.length) {
      counts.lost += lost.length;
      this.log.warn(
        { queue, flowId, dependencies: lost.length, refs: lost.slice(0, 20).map((j) => j.ref) },
        'flow restore: dependencies lost with Redis before they reached PostgreSQL count as ended, not completed: their cancel dependents are cancelled (dependency_failed), their run dependents run',
      );
    }
    const createdAt = Math.min(...rows.map((r) => Number(r.ca)));
    const r = await this.stores.flowRestore.rebuild(flowId, projectOf(rows[0].queue), createdAt, [...jobs, ...extra]);
    if (r.created) counts.created++;
    counts.applied += r.applied;
    plan.flows.add(flowId);
    for (const j of rows) plan.queues.add(j.queue);
  }

  /**
   * The dependencies the flow's edges name that PostgreSQL holds no row of:
   * - Redis holds it (its queue kept by Redis, its `enqueued` not mirrored
   *   yet): a job of the record like the others, from its hash (status,
   *   policy, dependencies), its outcome not authoritative;
   * - else, old enough for retention to have pruned it (finished long ago):
   *   `pruned`, counted as met;
   * - else it was lost with Redis before the mirror wrote it: a job of the
   *   record with outcome `ended` (authoritative), so its `cancel`
   *   dependents are cancelled and its `run` dependents run — never released
   *   as if it had completed.
   * Looked for in the queue its edge names, else (edges mirrored before
   * migration 1796002050000) in every queue of the flow.
   */
  private async unknownDependencies(rows: FlowJobRow[], known: Set<string>): Promise<{ extra: FlowRestoreJob[]; pruned: Set<string> }> {
    const unknown = new Map<string, Edge>();
    for (const r of rows) for (const d of r.deps) if (!known.has(d.id) && !unknown.has(d.id)) unknown.set(d.id, d);
    const extra: FlowRestoreJob[] = [];
    const pruned = new Set<string>();
    if (!unknown.size) return { extra, pruned };
    const flowQueues = [...new Set(rows.map((r) => r.queue))];
    const probes: { edge: Edge; queue: string }[] = [];
    for (const e of unknown.values()) for (const q of e.queue ? [e.queue] : flowQueues) probes.push({ edge: e, queue: q });
    const found = new Map<string, { queue: string; held: NonNullable<Awaited<ReturnType<FlowRestoreStore['peek']>>[number]> }>();
    for (let i = 0; i < probes.length; i += FLOW_RESTORE_MAX_JOBS) {
      const chunk = probes.slice(i, i + FLOW_RESTORE_MAX_JOBS);
      const held = await this.stores.flowRestore.peek(chunk.map((p) => ({ queue: p.queue, id: p.edge.id })));
      chunk.forEach((p, k) => {
        const h = held[k];
        if (h && !found.has(p.edge.id)) found.set(p.edge.id, { queue: p.queue, held: h });
      });
    }
    for (const e of unknown.values()) {
      const f = found.get(e.id);
      if (f) {
        extra.push({ id: e.id, queue: f.queue, onDependencyFailure: f.held.onDependencyFailure, dependsOn: f.held.dependsOn, ref: e.ref, outcome: outcomeOf(f.held.status), authoritative: false });
      } else if (mayBePruned(e.id)) pruned.add(e.id);
      else extra.push({ id: e.id, queue: e.queue ?? '', onDependencyFailure: 'cancel', dependsOn: [], ref: e.ref, outcome: 'ended', authoritative: true });
    }
    return { extra, pruned };
  }

  /**
   * Carries out a rebuild's plan once the queue's jobs are back in Redis: the
   * flow worker watches each queue again; then each flow's record is read
   * (lua/flowMoves-1.lua) and the dependents it frees are unblocked, the
   * `cancel` dependents of an ended dependency cancelled (a no-op on a job
   * not blocked, or in a queue fenced until the restore watch checked it).
   * Read now, not when the record was rebuilt: a dependency that completed
   * in between found its dependent not yet back (the flow worker's move was
   * a no-op), and only this read sees its outcome for it.
   * @returns the jobs moved.
   */
  async release(plan: FlowReleasePlan): Promise<{ released: number; cancelled: number }> {
    for (const q of plan.queues) await this.stores.flows.watch(q);
    const release = new Map<string, Set<string>>();
    const cancel = new Map<string, Set<string>>();
    const add = (m: Map<string, Set<string>>, refs: { queue: string; id: string }[]) => {
      for (const x of refs) m.set(x.queue, (m.get(x.queue) ?? new Set()).add(x.id));
    };
    const flows = [...plan.flows];
    for (let i = 0; i < flows.length; i += MOVES_AT_ONCE) {
      for (const m of await Promise.all(flows.slice(i, i + MOVES_AT_ONCE).map((f) => this.stores.flowRestore.moves(f)))) {
        add(release, m.release);
        add(cancel, m.cancel);
      }
    }
    const run = async (op: 'unblock' | 'cancel', m: Map<string, Set<string>>) => {
      let n = 0;
      for (const [q, set] of m) {
        const ids = [...set];
        try {
          for (let i = 0; i < ids.length; i += MOVE_CHUNK) n += (await this.stores.flows.move(q, op, ids.slice(i, i + MOVE_CHUNK))).length;
        } catch (e) {
          // Fenced until the restore watch checked it: its check's pass moves them (QueueRestorer.releaseFlows).
          if (!(e instanceof UnavailableError)) throw e;
        }
      }
      return n;
    };
    return { released: await run('unblock', release), cancelled: await run('cancel', cancel) };
  }
}
