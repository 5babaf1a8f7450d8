import { createHash } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import { DEFAULT_BACKOFF, encodeBackoff } from '../../core/backoff';
import { ScriptErrorCode, IdempotencyConflictError, UnavailableError, ValidationError } from '../../core/errors';
import type { JobStatus } from '../../core/job-status';
import { LIMITS, NormalizedEnqueue } from '../../core/job-options';
import type { AdmissionCheck, EnqueueResult } from '../../core/ports/jobs';
import type { JobTrace } from '../../core/trace-context';
import type { RedisContext } from '../context';
import { splitOptions } from '../../core/packed-options';
import type { RedisQueueStore } from './queue-store';

/** Process-level defaults applied when neither the job nor its queue sets them. */
export interface StoreDefaults {
  maxAttempts: number;
  timeoutMs: number;
  idempotencyTtlMs: number;
}

/**
 * The process defaults from the configuration (MAX_RETRIES, IDEMPOTENCY_TTL_MS;
 * timeout 600,000 ms), for every process or thread that builds a store.
 */
export function storeDefaultsOf(c: { maxRetries: number; idempotencyTtlMs: number }): StoreDefaults {
  return { maxAttempts: c.maxRetries, timeoutMs: 600_000, idempotencyTtlMs: c.idempotencyTtlMs };
}

/** Upper bound of jobs per enqueue script call, so one call never holds Redis long. */
const MAX_JOBS_PER_CALL = 1000;

/**
 * Pending single requests are sent as soon as this many jobs of one queue
 * have gathered, instead of at the end of the event-loop turn: with 50 adds
 * in flight, two or three calls are then in flight at once and Redis works
 * on one while Node builds the next (measured: 25 beats 12, 20 and 32, and
 * one call per turn by ~1.5×, in single adds per second on 2 cores).
 */
const EAGER_SEND_JOBS = 25;

interface GroupResult {
  results: EnqueueResult[];
  conflictIndex?: number;
}
interface PendingGroup {
  jobs: NormalizedEnqueue[];
  /** The request's trace context, stored on each of its jobs (lua/enqueueJobs-5.lua). */
  trace: JobTrace | null | undefined;
  resolve: (r: GroupResult) => void;
  reject: (e: unknown) => void;
}

/**
 * Enqueue for {@link RedisJobStore}: lua/enqueueJobs-5.lua with a group
 * commit across the requests of one event-loop turn.
 */
export class EnqueueBatcher {
  private readonly defaultBackoff = encodeBackoff(DEFAULT_BACKOFF);
  private admission: AdmissionCheck | null = null;

  constructor(
    private readonly ctx: RedisContext,
    private readonly queues: RedisQueueStore,
    private readonly defaults: StoreDefaults = { maxAttempts: 3, timeoutMs: LIMITS.defaultTimeoutMs, idempotencyTtlMs: 86_400_000 },
  ) {}

  /** See {@link JobStore.setAdmission}. */
  setAdmission(check: AdmissionCheck | null): void {
    this.admission = check;
  }

  /**
   * Enqueues jobs; several queues are allowed, each queue's jobs are written
   * atomically. Results come back in input order.
   *
   * Group commit: the requests of one event-loop turn are coalesced into
   * script calls per queue, each request staying an independent atomic group
   * inside its call. A call leaves as soon as EAGER_SEND_JOBS jobs have
   * gathered (so several are in flight and Redis and Node work in parallel),
   * the rest at the end of the turn; a lone request is never delayed.
   * @param trace the request's W3C trace context (validated, src/core/trace-context.ts):
   *   every job of the request stores it (hash fields tp, ts) for its workers.
   * A job with `debounce` whose key is held by a pending job updates that
   * job instead (result `debounced: true`, lua/enqueueJobs-5.lua).
   * @throws IdempotencyConflictError (nothing of that request's queue group written).
   * @throws ValidationError when a job carries both debounce and an
   *   idempotency key (the API refuses the pair first; nothing written).
   * @throws UnavailableError when the admission check refuses the call
   *   (nothing written, not even the queue's name in the registry).
   */
  async enqueue(jobs: NormalizedEnqueue[], trace?: JobTrace | null): Promise<EnqueueResult[]> {
    const refused = this.admission?.();
    if (refused) throw new UnavailableError(refused);
    if (!jobs.length) return [];
    const both = jobs.findIndex((j) => j.debounce && j.idempotencyKey !== undefined);
    if (both >= 0) throw new ValidationError('invalid job', [{ path: jobs.length > 1 ? `jobs[${both}].debounce` : 'debounce', message: 'debounce and idempotencyKey are mutually exclusive' }]);
    const queue = jobs[0].queue;
    if (jobs.every((j) => j.queue === queue)) {
      // The common case, one queue: no per-queue bookkeeping on the hot path.
      if (!this.queues.isRegistered(queue)) await this.queues.register(queue);
      const out = await this.submitGroup(queue, jobs, trace);
      if (out.conflictIndex !== undefined) throw new IdempotencyConflictError(jobs[out.conflictIndex].idempotencyKey as string);
      return out.results;
    }
    const groups = new Map<string, number[]>();
    jobs.forEach((j, i) => {
      const g = groups.get(j.queue);
      if (g) g.push(i);
      else groups.set(j.queue, [i]);
    });
    const results: EnqueueResult[] = new Array(jobs.length);
    if (groups.size > 1) await this.precheckIdempotency(jobs);
    await Promise.all(
      [...groups].map(async ([queue, idx]) => {
        await this.queues.register(queue);
        const out = await this.submitGroup(queue, idx.map((i) => jobs[i]), trace);
        if (out.conflictIndex !== undefined) throw new IdempotencyConflictError(jobs[idx[out.conflictIndex]].idempotencyKey as string);
        idx.forEach((i, n) => (results[i] = out.results[n]));
      }),
    );
    return results;
  }

  /**
   * A request spanning several queues is atomic per queue only (each queue is
   * one script call, possibly on another cluster shard), so an idempotency
   * conflict in one queue would leave the others written behind a 409. Checked
   * before anything is written: keys repeated in the request with different
   * bodies, and keys already used with another body. Only a concurrent request
   * racing this one can still slip between the check and the write.
   * @throws IdempotencyConflictError, nothing written.
   */
  private async precheckIdempotency(jobs: NormalizedEnqueue[]): Promise<void> {
    const seen = new Map<string, string>();
    const checks: { key: string; hash: string; idem: string }[] = [];
    for (const j of jobs) {
      if (!j.idempotencyKey) continue;
      const hash = bodyHash(j);
      const id = `${j.queue}\u0000${j.idempotencyKey}`;
      const prev = seen.get(id);
      if (prev !== undefined && prev !== hash) throw new IdempotencyConflictError(j.idempotencyKey);
      if (prev === undefined) checks.push({ key: this.ctx.keys(j.queue).base + 'idem:' + j.idempotencyKey, hash, idem: j.idempotencyKey });
      seen.set(id, hash);
    }
    const stored = await Promise.all(checks.map((c) => this.ctx.redis.get(c.key)));
    stored.forEach((v, i) => {
      // Stored as `jobId|bodyHash` by lua/enqueueJobs-5.lua.
      if (v !== null && v.slice(v.indexOf('|') + 1) !== checks[i].hash) throw new IdempotencyConflictError(checks[i].idem);
    });
  }

  private pending = new Map<string, { groups: PendingGroup[]; jobs: number }>();
  private flushScheduled = false;

  private submitGroup(queue: string, jobs: NormalizedEnqueue[], trace: JobTrace | null | undefined): Promise<GroupResult> {
    return new Promise((resolve, reject) => {
      let p = this.pending.get(queue);
      if (!p) this.pending.set(queue, (p = { groups: [], jobs: 0 }));
      p.groups.push({ jobs, trace, resolve, reject });
      p.jobs += jobs.length;
      if (p.jobs >= EAGER_SEND_JOBS) {
        this.pending.delete(queue);
        this.sendGroups(queue, p.groups);
      } else if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(() => this.flushEnqueues());
      }
    });
  }

  private flushEnqueues(): void {
    this.flushScheduled = false;
    const all = this.pending;
    this.pending = new Map();
    for (const [queue, p] of all) this.sendGroups(queue, p.groups);
  }

  /** Sends a queue's pending groups in calls of at most MAX_JOBS_PER_CALL jobs (a group is never split). */
  private sendGroups(queue: string, groups: PendingGroup[]): void {
    let call: PendingGroup[] = [];
    let size = 0;
    for (const g of groups) {
      if (size > 0 && size + g.jobs.length > MAX_JOBS_PER_CALL) {
        void this.sendEnqueue(queue, call);
        call = [];
        size = 0;
      }
      call.push(g);
      size += g.jobs.length;
    }
    if (call.length) void this.sendEnqueue(queue, call);
  }

  private async sendEnqueue(queue: string, groups: PendingGroup[]): Promise<void> {
    const k = this.ctx.keys(queue);
    const args: (string | number)[] = [
      k.base,
      this.defaults.maxAttempts,
      this.defaultBackoff,
      this.defaults.timeoutMs,
      this.defaults.idempotencyTtlMs,
      groups.length,
    ];
    // A group with a trace context: "<count>\n<traceparent>[\n<tracestate>]" (see the script's header).
    for (const g of groups) args.push(g.trace ? `${g.jobs.length}\n${g.trace.traceparent}${g.trace.tracestate ? `\n${g.trace.tracestate}` : ''}` : g.jobs.length);
    for (const g of groups) {
      for (const j of g.jobs) {
        const mode = j.delayMs !== undefined ? 'd' : j.runAt !== undefined ? 'a' : '';
        args.push(
          j.flow?.jobId ?? uuidv7(),
          j.type,
          j.payloadJson,
          j.priority,
          mode,
          j.delayMs ?? j.runAt ?? 0,
          j.maxAttempts ?? '',
          j.backoff ? encodeBackoff(j.backoff) : '',
          j.timeoutMs ?? '',
          j.idempotencyKey ?? '',
          j.idempotencyKey ? bodyHash(j) : '',
          j.concurrencyKey ?? '',
          j.debounce ? `${j.debounce.windowMs}|${j.debounce.maxWaitMs ?? ''}|${j.debounce.key}` : '',
          j.flow ? `${j.flow.flowId}\n${j.flow.onDependencyFailure === 'run' ? 'r' : 'c'}\n${j.flow.ref}\n${JSON.stringify(j.flow.dependsOn)}` : '',
        );
      }
    }
    let out: (string | number)[][];
    try {
      out = await this.ctx.scripts.run<(string | number)[][]>('enqueueJobs', [k.waiting, k.delayed, k.events, k.wake, k.meta], args);
    } catch (e) {
      for (const g of groups) g.reject(e);
      return;
    }
    groups.forEach((g, n) => {
      const r = out[n];
      if (r[0] === ScriptErrorCode.IdempotencyConflict) return g.resolve({ results: [], conflictIndex: Number(r[1]) });
      const results: EnqueueResult[] = [];
      // 6 entries per job; a debounced one (flag 2) has a 7th, its updatedAt.
      for (let i = 1; i < r.length; ) {
        const flag = Number(r[i + 2]);
        const replayed = flag === 1;
        const res: EnqueueResult = { id: String(r[i]), status: r[i + 1] as JobStatus, replayed };
        const o = replayed ? null : splitOptions(String(r[i + 5]));
        if (o) res.created = { createdAt: Number(r[i + 3]), runAt: Number(r[i + 4]), ...o };
        if (flag === 2) {
          res.debounced = true;
          if (res.created) res.created.updatedAt = Number(r[i + 6]);
          i += 7;
        } else i += 6;
        results.push(res);
      }
      g.resolve({ results });
    });
  }

}

/** Stable hash of the parts of an enqueue request that define "the same body" (also each job of a flow's: flow-keys.ts). */
export function bodyHash(j: NormalizedEnqueue): string {
  const canonical = JSON.stringify([j.type, j.payloadJson, j.priority, j.delayMs ?? null, j.runAt ?? null, j.maxAttempts ?? null, j.backoff ?? null, j.timeoutMs ?? null, j.concurrencyKey ?? null]);
  return createHash('sha256').update(canonical).digest('base64url').slice(0, 22);
}

