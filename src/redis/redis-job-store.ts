import { createHash, randomBytes } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import { DEFAULT_BACKOFF, encodeBackoff } from '../core/backoff';
import { ScriptErrorCode, errorFromCode, IdempotencyConflictError } from '../core/errors';
import type { ClaimedJob, Job, Json } from '../core/job';
import type { JobStatus } from '../core/job-status';
import { LIMITS, NormalizedEnqueue } from '../core/job-options';
import type { ClaimBlock, ClaimResult, EnqueueResult, FailInput, JobStore, LeaseStatus } from '../core/ports';
import type { RedisClient } from './connection';
import { decodeClaimed, decodeJob, JobDecodeError, pairsToObject } from './job-codec';
import { QueueKeys, cancelChannel, queueKeys, queuesKey } from './keys';
import { RedisScripts } from './scripts';

/** Process-level defaults applied when neither the job nor its queue sets them. */
export interface StoreDefaults {
  maxAttempts: number;
  timeoutMs: number;
  idempotencyTtlMs: number;
}

const CLAIM_BLOCKS: ClaimBlock[] = ['none', 'paused', 'concurrency', 'rate_limited', 'external'];

/**
 * The Redis implementation of {@link JobStore}: the only code that builds
 * KEYS/ARGV arrays for the Lua scripts in lua/. Each method is one script
 * call (one atomic step, one round trip).
 */
export class RedisJobStore implements JobStore {
  private readonly keysCache = new Map<string, QueueKeys>();
  private readonly knownQueues = new Set<string>();

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
  async registerQueue(queue: string): Promise<void> {
    if (this.knownQueues.has(queue)) return;
    await this.redis.sadd(queuesKey(this.prefix), queue);
    this.knownQueues.add(queue);
  }

  /** All queue names ever registered. */
  async listQueues(): Promise<string[]> {
    return (await this.redis.smembers(queuesKey(this.prefix))).sort();
  }

  /**
   * Enqueues jobs; several queues are allowed, each queue's jobs are written
   * atomically by one script call. Results come back in input order.
   * @throws IdempotencyConflictError (nothing of that queue's group written).
   */
  async enqueue(jobs: NormalizedEnqueue[]): Promise<EnqueueResult[]> {
    const groups = new Map<string, number[]>();
    jobs.forEach((j, i) => {
      const g = groups.get(j.queue);
      if (g) g.push(i);
      else groups.set(j.queue, [i]);
    });
    const results: EnqueueResult[] = new Array(jobs.length);
    await Promise.all(
      [...groups].map(async ([queue, idx]) => {
        await this.registerQueue(queue);
        const k = this.keys(queue);
        const args: (string | number)[] = [
          k.base,
          this.defaults.maxAttempts,
          encodeBackoff(DEFAULT_BACKOFF),
          this.defaults.timeoutMs,
          this.defaults.idempotencyTtlMs,
        ];
        for (const i of idx) {
          const j = jobs[i];
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
        const out = await this.scripts.run<(string | number)[]>('enqueueJobs', [k.waiting, k.delayed, k.events, k.wake, k.meta], args);
        if (out[0] === ScriptErrorCode.IdempotencyConflict) {
          throw new IdempotencyConflictError(jobs[idx[Number(out[1])]].idempotencyKey as string);
        }
        idx.forEach((i, n) => {
          results[i] = { id: String(out[n * 3]), status: out[n * 3 + 1] as JobStatus, replayed: Number(out[n * 3 + 2]) === 1 };
        });
      }),
    );
    return results;
  }

  /**
   * Claims up to `max` jobs of `queue` under a lease of `leaseMs`. Jobs whose
   * hash cannot be decoded are dead-lettered here with a decode error and not
   * returned, so a corrupted job never reaches (or stops) a worker.
   */
  async claim(queue: string, max: number, leaseMs: number, workerId: string, external = false): Promise<ClaimResult> {
    const k = this.keys(queue);
    const tokenBase = randomBytes(12).toString('base64url') + '.';
    const out = await this.scripts.run<any[]>(
      'claimJobs',
      [k.waiting, k.delayed, k.active, k.meta, k.events, k.wake, k.rateLimit, k.failed],
      [k.base, max, leaseMs, workerId, tokenBase, external ? '1' : '0'],
    );
    const jobs: ClaimedJob[] = [];
    for (let i = 2; i < out.length; i++) {
      try {
        jobs.push(decodeClaimed(queue, out[i]));
      } catch (e) {
        if (!(e instanceof JobDecodeError)) throw e;
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
    return { jobs, block: CLAIM_BLOCKS[Number(out[0])] ?? 'none', retryInMs: Number(out[1]) };
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
    return out.map((c) => (c === 1 ? 'completed' : c === ScriptErrorCode.LeaseLost ? 'lease_lost' : 'not_found') as 'completed' | 'lease_lost' | 'not_found');
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
    const raw = await this.redis.hgetallBuffer(this.keys(queue).base + 'job:' + id);
    if (!raw || Object.keys(raw).length === 0) return null;
    return decodeJob(id, queue, mergePayload(raw));
  }

  /** Queue settings: pause, concurrency cap, rate limit, external, defaults. */
  async configureQueue(
    queue: string,
    cfg: {
      paused?: boolean;
      maxConcurrency?: number | null;
      rateLimit?: { max: number; durationMs: number } | null;
      external?: boolean;
      defaults?: { maxAttempts?: number; backoff?: import('../core/backoff').BackoffSpec; timeoutMs?: number };
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
}

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
