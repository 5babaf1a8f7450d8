import { createHash, randomBytes } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import { BackoffSpec, DEFAULT_BACKOFF, decodeBackoff, encodeBackoff } from '../core/backoff';
import { ScriptErrorCode, errorFromCode, IdempotencyConflictError, UnavailableError } from '../core/errors';
import type { Job, Json, WorkerJob } from '../core/job';
import type { JobStatus } from '../core/job-status';
import { LIMITS, NormalizedEnqueue } from '../core/job-options';
import type { JobTrace } from '../core/trace-context';
import type { ClaimBlock, ClaimResult, EnqueueResult, FailInput, JobStore, LeaseStatus } from '../core/ports';
import type { RedisClient } from './connection';
import { ClaimEntry, splitOptions, decodeClaimed, decodeJob, decodeJobLeniently, decodeWorkerJob, JobDecodeError, pairsToObject } from './job-codec';
import { QueueKeys, cancelChannel, newQueueChannel, queueKeys, queuesKey } from './keys';
import { RedisScripts, ScriptName } from './scripts';

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
 * Admission control for enqueue: returns null to admit the call, or the
 * reason it is refused (the message of the UnavailableError enqueue throws).
 */
export type AdmissionCheck = () => string | null;

/** Per-job outcome of complete(). */
export type CompleteOutcome = 'completed' | 'cancelled' | 'lease_lost' | 'not_found';

const CLAIM_BLOCKS: ClaimBlock[] = ['none', 'paused', 'concurrency', 'rate_limited', 'external', 'solo', 'isolate'];

/**
 * The Redis implementation of {@link JobStore}: the only code that builds
 * KEYS/ARGV arrays for the Lua scripts in lua/. Each method is one script
 * call (one atomic step, one round trip).
 */
export class RedisJobStore implements JobStore {
  private readonly keysCache = new Map<string, QueueKeys>();
  private readonly knownQueues = new Map<string, Promise<void>>();
  /** Queues whose registration has completed (a synchronous check for the enqueue hot path). */
  private readonly registeredQueues = new Set<string>();
  private readonly defaultBackoff = encodeBackoff(DEFAULT_BACKOFF);
  private admission: AdmissionCheck | null = null;

  constructor(
    readonly redis: RedisClient,
    readonly scripts: RedisScripts,
    readonly prefix: string,
    private readonly defaults: StoreDefaults = { maxAttempts: 3, timeoutMs: LIMITS.defaultTimeoutMs, idempotencyTtlMs: 86_400_000 },
  ) {}

  keys(queue: string): QueueKeys {
    let k = this.keysCache.get(queue);
    if (!k) {
      k = queueKeys(this.prefix, queue);
      this.keysCache.set(queue, k);
    }
    return k;
  }

  /**
   * Records a queue name in the global registry (once per process).
   * Workers serving `*` discover queues from it.
   */
  registerQueue(queue: string): Promise<void> {
    let p = this.knownQueues.get(queue);
    if (!p) {
      // A brand-new queue is announced so audit writers mirror it at once, not at their next poll.
      p = this.redis.sadd(queuesKey(this.prefix), queue).then(async (added) => {
        if (added === 1) await this.redis.publish(newQueueChannel(this.prefix), queue);
        this.registeredQueues.add(queue);
      });
      p.catch(() => this.knownQueues.delete(queue)); // retried by the next call
      this.knownQueues.set(queue, p);
    }
    return p;
  }

  /**
   * Installs the check {@link enqueue} consults before it writes anything
   * (load shedding, e.g. src/mirror/backlog.ts BacklogGuard); `null`
   * removes it. The check runs synchronously on every enqueue call, so it
   * must answer from memory.
   */
  setAdmission(check: AdmissionCheck | null): void {
    this.admission = check;
  }

  /** All queue names ever registered. */
  async listQueues(): Promise<string[]> {
    return (await this.redis.smembers(queuesKey(this.prefix))).sort();
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
   * @throws IdempotencyConflictError (nothing of that request's queue group written).
   * @throws UnavailableError when the admission check refuses the call
   *   (nothing written, not even the queue's name in the registry).
   */
  async enqueue(jobs: NormalizedEnqueue[], trace?: JobTrace | null): Promise<EnqueueResult[]> {
    const refused = this.admission?.();
    if (refused) throw new UnavailableError(refused);
    if (!jobs.length) return [];
    const queue = jobs[0].queue;
    if (jobs.every((j) => j.queue === queue)) {
      // The common case, one queue: no per-queue bookkeeping on the hot path.
      if (!this.registeredQueues.has(queue)) await this.registerQueue(queue);
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
        await this.registerQueue(queue);
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
      if (prev === undefined) checks.push({ key: this.keys(j.queue).base + 'idem:' + j.idempotencyKey, hash, idem: j.idempotencyKey });
      seen.set(id, hash);
    }
    const stored = await Promise.all(checks.map((c) => this.redis.get(c.key)));
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
    const k = this.keys(queue);
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
          uuidv7(),
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
        );
      }
    }
    let out: (string | number)[][];
    try {
      out = await this.scripts.run<(string | number)[][]>('enqueueJobs', [k.waiting, k.delayed, k.events, k.wake, k.meta], args);
    } catch (e) {
      for (const g of groups) g.reject(e);
      return;
    }
    groups.forEach((g, n) => {
      const r = out[n];
      if (r[0] === ScriptErrorCode.IdempotencyConflict) return g.resolve({ results: [], conflictIndex: Number(r[1]) });
      const results: EnqueueResult[] = [];
      for (let i = 1; i < r.length; i += 6) {
        const replayed = Number(r[i + 2]) === 1;
        const res: EnqueueResult = { id: String(r[i]), status: r[i + 1] as JobStatus, replayed };
        const o = replayed ? null : splitOptions(String(r[i + 5]));
        if (o) res.created = { createdAt: Number(r[i + 3]), runAt: Number(r[i + 4]), ...o };
        results.push(res);
      }
      g.resolve({ results });
    });
  }

  /**
   * Claims up to `max` jobs of `queue` under a lease of `leaseMs`, full jobs
   * (every field, as the API serves them). Jobs whose hash cannot be decoded
   * are dead-lettered here with a decode error and not returned, so a
   * corrupted job never reaches (or stops) a worker.
   */
  async claim(queue: string, max: number, leaseMs: number, workerId: string, external = false): Promise<ClaimResult> {
    // The caller (an external worker or a test) is treated as holding nothing.
    const r = await this.claimRaw(queue, max, leaseMs, workerId, external, true, true, (e) => decodeClaimed(queue, e));
    return r as ClaimResult;
  }

  /**
   * Like {@link claim}, but returns only what a worker needs (a smaller reply,
   * cheaper to decode). `idle`: the worker holds no job, so it may be given a
   * job that must run alone (block `solo`).
   */
  async claimForWorker(queue: string, max: number, leaseMs: number, workerId: string, idle = true): Promise<{ jobs: WorkerJob[]; block: ClaimBlock; retryInMs: number }> {
    return this.claimRaw(queue, max, leaseMs, workerId, false, false, idle, decodeWorkerJob);
  }

  private async claimRaw<T>(
    queue: string,
    max: number,
    leaseMs: number,
    workerId: string,
    external: boolean,
    full: boolean,
    idle: boolean,
    decode: (e: ClaimEntry) => T,
  ): Promise<{ jobs: T[]; block: ClaimBlock; retryInMs: number }> {
    const k = this.keys(queue);
    const tokenBase = randomBytes(12).toString('base64url') + '.';
    const out = await this.scripts.run<any[]>(
      'claimJobs',
      [k.waiting, k.delayed, k.active, k.meta, k.events, k.wake, k.rateLimit, k.failed],
      [k.base, max, leaseMs, workerId, tokenBase, external ? '1' : '0', full ? '1' : '0', idle ? '1' : '0'],
    );
    const jobs: T[] = [];
    let undecodable = false;
    for (let i = 2; i < out.length; i++) {
      try {
        jobs.push(decode(out[i]));
      } catch (e) {
        if (!(e instanceof JobDecodeError)) throw e;
        undecodable = true;
        const [id, token] = out[i] as [string, string];
        await this.fail(queue, id, token, {
          error: `decode error: ${e.message}`,
          retryable: false,
          delayMs: 0,
          reason: 'decode_error',
          workerId,
        }).catch(() => undefined); // lease lost meanwhile: the reaper owns it now
      }
    }
    // A dead-lettered job took a slot of this claim: more may be waiting, so claim again now.
    return { jobs, block: CLAIM_BLOCKS[Number(out[0])] ?? 'none', retryInMs: undecodable ? 0 : Number(out[1]) };
  }

  async extendLeases(queue: string, leases: { id: string; lockToken: string }[], leaseMs: number) {
    const k = this.keys(queue);
    const args: (string | number)[] = [k.base, leaseMs];
    for (const l of leases) args.push(l.id, l.lockToken);
    const out = await this.scripts.run<number[]>('extendLocks', [k.active], args);
    const statuses: LeaseStatus[] = out.slice(1).map((c) => (c === 1 ? 'ok' : c === 2 ? 'cancel_requested' : 'lease_lost'));
    return { leaseExpiresAt: Number(out[0]), statuses };
  }

  async complete(queue: string, workerId: string, acks: { id: string; lockToken: string; result: Json | undefined }[]) {
    const k = this.keys(queue);
    const args: (string | number)[] = [k.base, workerId];
    for (const a of acks) args.push(a.id, a.lockToken, a.result === undefined ? 'null' : JSON.stringify(a.result));
    const out = await this.scripts.run<number[]>('completeJobs', [k.active, k.events, k.wake, k.meta, k.waiting], args);
    return out.map((c) => (c === 1 ? 'completed' : c === 2 ? 'cancelled' : c === ScriptErrorCode.LeaseLost ? 'lease_lost' : 'not_found') as CompleteOutcome);
  }

  async fail(queue: string, id: string, lockToken: string, input: FailInput): Promise<JobStatus> {
    const k = this.keys(queue);
    const [code, status] = await this.scripts.run<[number, string]>(
      'failJob',
      [k.active, k.delayed, k.waiting, k.failed, k.events, k.wake, k.meta],
      [k.base, id, lockToken, input.error, input.retryable ? '1' : '0', Math.max(0, Math.floor(input.delayMs)), input.reason, input.workerId],
    );
    if (code !== 1) throw errorFromCode(code, id, status, 'fail');
    return status as JobStatus;
  }

  async release(queue: string, workerId: string, leases: { id: string; lockToken: string }[]) {
    const k = this.keys(queue);
    const args: (string | number)[] = [k.base, workerId];
    for (const l of leases) args.push(l.id, l.lockToken);
    const out = await this.scripts.run<number[]>('releaseJobs', [k.active, k.waiting, k.events, k.wake, k.meta], args);
    return out.map((c) => (c === 1 ? 'released' : c === 2 ? 'cancelled' : c === ScriptErrorCode.LeaseLost ? 'lease_lost' : 'not_found') as 'released' | 'cancelled' | 'lease_lost' | 'not_found');
  }

  async progress(queue: string, id: string, lockToken: string, workerId: string, progress: Json | undefined, logs: { level: string; message: string }[]) {
    const k = this.keys(queue);
    const args: (string | number)[] = [k.base, id, lockToken, workerId, progress === undefined ? '' : JSON.stringify(progress)];
    for (const l of logs) args.push(`${l.level}|${l.message}`);
    const code = await this.scripts.run<number>('updateProgress', [k.events], args);
    if (code !== 1) throw errorFromCode(code, id);
  }

  async cancel(queue: string, id: string): Promise<JobStatus> {
    const k = this.keys(queue);
    const [code, status] = await this.scripts.run<[number, string]>(
      'cancelJob',
      [k.waiting, k.delayed, k.events, k.meta],
      [k.base, id, cancelChannel(this.prefix)],
    );
    if (code < 0) throw errorFromCode(code, id, status, 'cancel');
    return status as JobStatus;
  }

  /**
   * {@link cancel} and a read of the job in one MULTI, so the job comes back
   * exactly as the cancel left it: `cancelled`, or still `active` with
   * `cancelRequested` even when its handler aborts and ends it a moment later
   * (the PUBLISH reaches the worker before a separate read would run).
   * @returns the script's status ('cancelled' or 'active') and the job.
   * @throws JobNotFoundError (no hash), WrongStateError (terminal; nothing changed).
   */
  async cancelAndGet(queue: string, id: string): Promise<{ status: JobStatus; job: Job }> {
    const k = this.keys(queue);
    const [[code, status], job] = await this.runAndRead<[number, string]>(
      'cancelJob',
      [k.waiting, k.delayed, k.events, k.meta],
      [k.base, id, cancelChannel(this.prefix)],
      queue,
      id,
    );
    if (code < 0 || !job) throw errorFromCode(code < 0 ? code : ScriptErrorCode.JobNotFound, id, status, 'cancel');
    return { status: status as JobStatus, job };
  }

  async retryFromDlq(queue: string, id: string, payload?: Record<string, Json>): Promise<JobStatus> {
    const k = this.keys(queue);
    const [code, status] = await this.scripts.run<[number, string]>(
      'retryJob',
      [k.failed, k.waiting, k.events, k.wake, k.meta],
      [k.base, id, payload === undefined ? '' : JSON.stringify(payload)],
    );
    if (code < 0) throw errorFromCode(code, id, status, 'retry');
    return status as JobStatus;
  }

  /**
   * {@link retryFromDlq} and a read of the job in one MULTI, so the job comes
   * back exactly as the retry left it (waiting, attempts 0), even when a
   * worker claims it a moment later.
   * @throws JobNotFoundError (no hash: unknown or pruned), WrongStateError
   *   (not failed/cancelled; nothing changed).
   */
  async retryFromDlqAndGet(queue: string, id: string, payload?: Record<string, Json>): Promise<Job> {
    const k = this.keys(queue);
    const [[code, status], job] = await this.runAndRead<[number, string]>(
      'retryJob',
      [k.failed, k.waiting, k.events, k.wake, k.meta],
      [k.base, id, payload === undefined ? '' : JSON.stringify(payload)],
      queue,
      id,
    );
    if (code < 0 || !job) throw errorFromCode(code < 0 ? code : ScriptErrorCode.JobNotFound, id, status, 'retry');
    return job;
  }

  /**
   * Recreates a cancelled job whose hash Redis has pruned, straight into
   * waiting with fresh counters (lua/reviveJob-4.lua), and reads it back in
   * the same MULTI.
   * @returns the job as revived, or null when its hash exists (nothing
   *   written: use {@link retryFromDlqAndGet}, which checks its state).
   */
  async reviveJob(j: ReviveJobInput): Promise<Job | null> {
    const k = this.keys(j.queue);
    const [[code], job] = await this.runAndRead<[number, string]>(
      'reviveJob',
      [k.waiting, k.events, k.wake, k.meta],
      [
        k.base, j.id, j.type, j.payload, j.priority, `${j.maxAttempts};${j.timeoutMs};${encodeBackoff(j.backoff)}`,
        j.createdAt, j.executionSeq, j.idempotencyKey ?? '', j.newPayload ? '1' : '0',
      ],
      j.queue,
      j.id,
    );
    return code === 1 ? job : null;
  }

  /**
   * Deletes up to `chunk` dead-letter jobs of a queue from Redis, each with a
   * `purged` event (lua/purgeDlq-2.lua). Call until `more` is false.
   * @returns jobs purged by this call; `more`: the chunk was full, so more may be left.
   */
  async purgeDlq(queue: string, chunk: number): Promise<{ purged: number; more: boolean }> {
    const k = this.keys(queue);
    const [purged, taken] = await this.scripts.run<[number, number]>('purgeDlq', [k.failed, k.events], [k.base, chunk]);
    return { purged: Number(purged), more: Number(taken) >= chunk };
  }

  /**
   * Runs a script and reads one job's hash in one MULTI (all keys share the
   * queue's slot). A NOSCRIPT reply (script cache flushed by hand) means the
   * script did not run: the scripts are loaded again and the MULTI retried once.
   */
  private async runAndRead<T>(name: ScriptName, keys: string[], args: (string | number)[], queue: string, id: string, retried = false): Promise<[T, Job | null]> {
    const jk = this.keys(queue).base + 'job:' + id;
    const multi = this.redis.multi() as any;
    multi[name](...keys, ...args);
    multi.hgetallBuffer(jk);
    const res: [Error | null, unknown][] | null = await multi.exec();
    if (!res) throw new Error(`${name}: transaction aborted`);
    const err = res.find(([e]) => e)?.[0];
    if (err && !retried && /NOSCRIPT/.test(err.message)) {
      await this.scripts.verify();
      return this.runAndRead(name, keys, args, queue, id, true);
    }
    if (err) throw err;
    return [res[0][1] as T, this.decodeRaw(queue, id, res[1][1] as Record<string, Buffer>)];
  }

  private decodeRaw(queue: string, id: string, raw: Record<string, Buffer> | null): Job | null {
    if (!raw || Object.keys(raw).length === 0) return null;
    const h = mergePayload(raw);
    try {
      return decodeJob(id, queue, h);
    } catch (e) {
      if (!(e instanceof JobDecodeError)) throw e;
      // A corrupted job (dead-lettered with a decode error) must stay readable.
      return decodeJobLeniently(id, queue, h);
    }
  }

  async promoteDelayed(queue: string, limit: number) {
    const k = this.keys(queue);
    const [promoted, nextInMs] = await this.scripts.run<[number, number]>(
      'promoteDelayed',
      [k.delayed, k.waiting, k.failed, k.events, k.wake],
      [k.base, limit],
    );
    return { promoted, nextInMs };
  }

  async reapExpired(queue: string, limit: number) {
    const k = this.keys(queue);
    const [reaped, nextInMs] = await this.scripts.run<[number, number]>(
      'reapExpired',
      [k.active, k.waiting, k.failed, k.events, k.wake, k.delayed],
      [k.base, limit],
    );
    return { reaped, nextInMs };
  }

  /**
   * Reads a job from Redis (payload chunks merged).
   * @returns null when Redis no longer holds it.
   * @throws JobDecodeError when the hash is corrupted.
   */
  async getJob(queue: string, id: string): Promise<Job | null> {
    return this.decodeRaw(queue, id, await this.redis.hgetallBuffer(this.keys(queue).base + 'job:' + id));
  }

  /**
   * The cheap part of a job hash: its status and the worker that last claimed
   * it (one HMGET, no payload). Used to find which queue holds a job id.
   * @returns null when this queue holds no such job.
   */
  async jobBrief(queue: string, id: string): Promise<{ status: string; workerId: string | null; leaseMs?: number } | null> {
    const [s, w, ll] = await this.redis.hmget(this.keys(queue).base + 'job:' + id, 's', 'w', 'll');
    if (s === null) return null;
    // `ll`: the lease length of an external claim (lua/claimJobs-8.lua).
    return ll ? { status: s, workerId: w || null, leaseMs: Number(ll) } : { status: s, workerId: w || null };
  }

  /** Queue settings: pause, concurrency cap, rate limit, external, defaults. */
  async configureQueue(
    queue: string,
    cfg: {
      paused?: boolean;
      maxConcurrency?: number | null;
      rateLimit?: { max: number; durationMs: number } | null;
      external?: boolean;
      defaults?: { maxAttempts?: number; backoff?: BackoffSpec; timeoutMs?: number };
    },
  ): Promise<void> {
    await this.registerQueue(queue);
    const k = this.keys(queue);
    const set: Record<string, string | number> = {};
    const del: string[] = [];
    if (cfg.paused !== undefined) set.paused = cfg.paused ? 1 : 0;
    if (cfg.external !== undefined) set.ext = cfg.external ? 1 : 0;
    if (cfg.maxConcurrency === null) del.push('mc');
    else if (cfg.maxConcurrency !== undefined) set.mc = cfg.maxConcurrency;
    if (cfg.rateLimit === null) del.push('rlMax', 'rlDur');
    else if (cfg.rateLimit) Object.assign(set, { rlMax: cfg.rateLimit.max, rlDur: cfg.rateLimit.durationMs });
    if (cfg.defaults?.maxAttempts !== undefined) set.dMa = cfg.defaults.maxAttempts;
    if (cfg.defaults?.backoff) set.dBo = encodeBackoff(cfg.defaults.backoff);
    if (cfg.defaults?.timeoutMs !== undefined) set.dTo = cfg.defaults.timeoutMs;
    const multi = this.redis.multi();
    if (Object.keys(set).length) multi.hset(k.meta, set);
    if (del.length) multi.hdel(k.meta, ...del);
    // Resuming (or lifting a limit) must wake the workers blocked on this queue.
    multi.rpush(k.wake, 1);
    await multi.exec();
  }

  /**
   * A queue's settings as configured (API.md queue object minus counts).
   * @returns null when the queue does not exist (never configured, paused
   *   or given a job: not in the registry).
   */
  async queueSettings(queue: string): Promise<QueueSettings | null> {
    const k = this.keys(queue);
    const [known, m] = await Promise.all([
      this.redis.sismember(queuesKey(this.prefix), queue),
      this.redis.hmget(k.meta, 'paused', 'mc', 'rlMax', 'rlDur', 'ext', 'dMa', 'dBo', 'dTo'),
    ]);
    if (!known) return null;
    const [paused, mc, rlMax, rlDur, ext, dMa, dBo, dTo] = m;
    const defaults: QueueSettings['defaults'] = {};
    if (dMa) defaults.maxAttempts = Number(dMa);
    if (dBo) {
      try {
        defaults.backoff = decodeBackoff(dBo);
      } catch {
        // a hand-edited meta hash: show no default rather than fail the read
      }
    }
    if (dTo) defaults.timeoutMs = Number(dTo);
    return {
      name: queue,
      paused: paused === '1',
      maxConcurrency: mc ? Number(mc) : null,
      rateLimit: rlMax && rlDur ? { max: Number(rlMax), durationMs: Number(rlDur) } : null,
      external: ext === '1',
      defaults,
    };
  }

  /** Live counts from Redis: waiting, delayed, active and the DLQ size. */
  async liveCounts(queue: string): Promise<{ waiting: number; delayed: number; active: number; failed: number }> {
    const k = this.keys(queue);
    const [w, d, a, f] = await Promise.all([
      this.redis.zcard(k.waiting),
      this.redis.zcard(k.delayed),
      this.redis.zcard(k.active),
      this.redis.zcard(k.failed),
    ]);
    return { waiting: w, delayed: d, active: a, failed: f };
  }

  /**
   * Recreates one chunk of a queue's jobs from their PostgreSQL copies
   * (lua/restoreJobs-8.lua; driven by src/restore/restore.ts). Fenced by the
   * queue's audit lock held with `lock.token`; `epoch` non-empty on the last
   * call sets the queue's epoch marker. Jobs that exist in Redis are skipped.
   */
  async restoreJobs(
    queue: string,
    lock: { token: string; ttlMs: number },
    opts: { epoch: string; minStreamId: string; group: string },
    jobs: RestoreJobInput[],
  ): Promise<RestoreJobsResult> {
    const k = this.keys(queue);
    const args: (string | number)[] = [k.base, lock.token, lock.ttlMs, opts.epoch, opts.minStreamId, opts.group];
    for (const j of jobs) {
      args.push(
        j.id, j.kind, j.type, j.payload, j.priority, `${j.maxAttempts};${j.timeoutMs};${j.backoff}`, j.attempts, j.executionSeq,
        j.createdAt, j.runAt, j.idempotencyKey ?? '', j.lastError ?? '', j.workerId ?? '', j.startedAt ?? '', j.failedAt ?? '', j.updatedAt,
      );
    }
    const out = await this.scripts.run<(string | number)[]>(
      'restoreJobs',
      [k.waiting, k.delayed, k.failed, k.events, k.wake, k.meta, k.epoch, k.auditLock],
      args,
    );
    if (out[0] !== 'ok') return { status: out[0] as 'lock_lost' | 'already_restored' };
    const [, waiting, delayed, active, failed, cancelled, skipped] = out.map(Number);
    return { status: 'ok', waiting, delayed, active, failed, cancelled, skipped };
  }
}

/** A queue's configuration as stored in its meta hash (see {@link RedisJobStore.configureQueue}). */
export interface QueueSettings {
  name: string;
  paused: boolean;
  /** Cap on active jobs across all workers; null = none. */
  maxConcurrency: number | null;
  /** Cap on job starts per window across all workers; null = none. */
  rateLimit: { max: number; durationMs: number } | null;
  /** Served only through the external worker protocol; accepts any job type. */
  external: boolean;
  /** Per-queue defaults for jobs that do not set them. */
  defaults: { maxAttempts?: number; backoff?: BackoffSpec; timeoutMs?: number };
}

/** One job for {@link RedisJobStore.restoreJobs}; times are epoch ms. */
export interface RestoreJobInput {
  id: string;
  /** Its state in PostgreSQL; `cancel` = active with a pending cancel request. */
  kind: 'waiting' | 'delayed' | 'active' | 'cancel' | 'failed';
  type: string;
  payload: string;
  priority: number;
  maxAttempts: number;
  timeoutMs: number;
  /** Encoded backoff (src/core/backoff.ts encodeBackoff). */
  backoff: string;
  attempts: number;
  executionSeq: number;
  createdAt: number;
  runAt: number;
  idempotencyKey: string | null;
  lastError: string | null;
  workerId: string | null;
  startedAt: number | null;
  failedAt: number | null;
  updatedAt: number;
}

/** A pruned cancelled job for {@link RedisJobStore.reviveJob}, from its PostgreSQL copy; times epoch ms. */
export interface ReviveJobInput {
  id: string;
  queue: string;
  type: string;
  /** Payload JSON: the stored one, or the retry's new payload. */
  payload: string;
  /** True when `payload` is a new payload (it is then carried on the event). */
  newPayload: boolean;
  priority: number;
  maxAttempts: number;
  timeoutMs: number;
  backoff: BackoffSpec;
  createdAt: number;
  executionSeq: number;
  idempotencyKey: string | null;
}

/** Outcome of one restoreJobs call: counts of jobs recreated per kind, and skipped (already in Redis). */
export type RestoreJobsResult =
  | { status: 'ok'; waiting: number; delayed: number; active: number; failed: number; cancelled: number; skipped: number }
  | { status: 'lock_lost' | 'already_restored' };

/** Stable hash of the parts of an enqueue request that define "the same body". */
function bodyHash(j: NormalizedEnqueue): string {
  const canonical = JSON.stringify([j.type, j.payloadJson, j.priority, j.delayMs ?? null, j.runAt ?? null, j.maxAttempts ?? null, j.backoff ?? null, j.timeoutMs ?? null]);
  return createHash('sha256').update(canonical).digest('base64url').slice(0, 22);
}

/**
 * Merges payload chunks p0..pN of a raw HGETALL (see lua/includes/job.lua).
 * Works on Buffers: a chunk boundary may fall inside a multi-byte character.
 */
function mergePayload(raw: Record<string, Buffer>): Record<string, string> {
  const out: Record<string, string> = {};
  const chunks: Buffer[] = [];
  for (const [key, v] of Object.entries(raw)) {
    const m = /^p(\d+)$/.exec(key);
    if (m) chunks[Number(m[1])] = v;
    else if (key !== 'pn') out[key] = v.toString('utf8');
  }
  out.p = Buffer.concat(chunks.filter(Boolean)).toString('utf8');
  return out;
}

export { pairsToObject };
