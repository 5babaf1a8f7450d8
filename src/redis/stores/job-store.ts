import { randomBytes } from 'node:crypto';
import { ScriptErrorCode, errorFromCode } from '../../core/errors';
import type { Job, JobDependency, Json } from '../../core/job';
import type { JobStatus } from '../../core/job-status';
import type { NormalizedEnqueue } from '../../core/job-options';
import type { JobTrace } from '../../core/trace-context';
import type { AdmissionCheck, ClaimBlock, ClaimResult, CompleteOutcome, EnqueueResult, FailInput, JobBrief, LeaseStatus, ReleaseOptions, ReleaseOutcome, WorkerClaimResult } from '../../core/ports/jobs';
import { JobStore } from '../../core/ports/jobs';
import type { RedisContext } from '../context';
import { ClaimEntry, decodeClaimed, decodeWorkerJob, flowDepsOf, FlowDeps, JobDecodeError } from '../job-codec';
import { resolveDependencies } from './flow-deps';
import { cancelChannel } from '../keys';
import { EnqueueBatcher, type StoreDefaults } from './enqueue';
import type { RedisQueueStore } from './queue-store';

const CLAIM_BLOCKS: ClaimBlock[] = ['none', 'paused', 'concurrency', 'rate_limited', 'external', 'solo', 'isolate'];

/**
 * The Redis implementation of {@link JobStore}. Each method is one script
 * call (one atomic step, one round trip); enqueue's group commit is
 * {@link EnqueueBatcher}'s.
 */
export class RedisJobStore implements JobStore {
  private readonly enqueuer: EnqueueBatcher;

  constructor(
    private readonly ctx: RedisContext,
    queues: RedisQueueStore,
    defaults?: StoreDefaults,
  ) {
    this.enqueuer = new EnqueueBatcher(ctx, queues, defaults);
  }

  enqueue(jobs: NormalizedEnqueue[], trace?: JobTrace | null): Promise<EnqueueResult[]> {
    return this.enqueuer.enqueue(jobs, trace);
  }

  setAdmission(check: AdmissionCheck | null): void {
    this.enqueuer.setAdmission(check);
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
  async claimForWorker(queue: string, max: number, leaseMs: number, workerId: string, idle = true): Promise<WorkerClaimResult> {
    return this.claimRaw(queue, max, leaseMs, workerId, false, false, idle, decodeWorkerJob);
  }

  private async claimRaw<T extends { dependencies: JobDependency[] }>(
    queue: string,
    max: number,
    leaseMs: number,
    workerId: string,
    external: boolean,
    full: boolean,
    idle: boolean,
    decode: (e: ClaimEntry) => T,
  ): Promise<{ jobs: T[]; block: ClaimBlock; retryInMs: number }> {
    const k = this.ctx.keys(queue);
    const tokenBase = randomBytes(12).toString('base64url') + '.';
    const out = await this.ctx.scripts.run<any[]>(
      'claimJobs',
      [k.waiting, k.delayed, k.active, k.meta, k.events, k.wake, k.rateLimit, k.failed],
      [k.base, max, leaseMs, workerId, tokenBase, external ? '1' : '0', full ? '1' : '0', idle ? '1' : '0'],
    );
    const jobs: T[] = [];
    const flows: [T, FlowDeps][] = [];
    let undecodable = false;
    for (let i = 2; i < out.length; i++) {
      try {
        const job = decode(out[i]);
        jobs.push(job);
        const deps = flowDepsOf(out[i]);
        if (deps) flows.push([job, deps]);
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
    if (flows.length) await resolveDependencies(this.ctx, flows);
    // A dead-lettered job took a slot of this claim: more may be waiting, so claim again now.
    return { jobs, block: CLAIM_BLOCKS[Number(out[0])] ?? 'none', retryInMs: undecodable ? 0 : Number(out[1]) };
  }

  async extendLeases(queue: string, leases: { id: string; lockToken: string }[], leaseMs: number) {
    const k = this.ctx.keys(queue);
    const args: (string | number)[] = [k.base, leaseMs];
    for (const l of leases) args.push(l.id, l.lockToken);
    const out = await this.ctx.scripts.run<number[]>('extendLocks', [k.active], args);
    const statuses: LeaseStatus[] = out.slice(1).map((c) => (c === 1 ? 'ok' : c === 2 ? 'cancel_requested' : 'lease_lost'));
    return { leaseExpiresAt: Number(out[0]), statuses };
  }

  async complete(queue: string, workerId: string, acks: { id: string; lockToken: string; result: Json | undefined }[]) {
    const k = this.ctx.keys(queue);
    const args: (string | number)[] = [k.base, workerId];
    for (const a of acks) args.push(a.id, a.lockToken, a.result === undefined ? 'null' : JSON.stringify(a.result));
    const out = await this.ctx.scripts.run<number[]>('completeJobs', [k.active, k.events, k.wake, k.meta, k.waiting], args);
    return out.map((c) => (c === 1 ? 'completed' : c === 2 ? 'cancelled' : c === ScriptErrorCode.LeaseLost ? 'lease_lost' : 'not_found') as CompleteOutcome);
  }

  async fail(queue: string, id: string, lockToken: string, input: FailInput): Promise<JobStatus> {
    const k = this.ctx.keys(queue);
    const [code, status] = await this.ctx.scripts.run<[number, string]>(
      'failJob',
      [k.active, k.delayed, k.waiting, k.failed, k.events, k.wake, k.meta],
      [k.base, id, lockToken, input.error, input.retryable ? '1' : '0', Math.max(0, Math.floor(input.delayMs)), input.reason, input.workerId],
    );
    if (code !== 1) throw errorFromCode(code, id, status, 'fail');
    return status as JobStatus;
  }

  async release(queue: string, workerId: string, leases: { id: string; lockToken: string }[], opts: ReleaseOptions = {}) {
    const k = this.ctx.keys(queue);
    const args: (string | number)[] = [k.base, workerId, Math.max(0, Math.floor(opts.delayMs ?? 0)), opts.reason ?? 'shutdown'];
    for (const l of leases) args.push(l.id, l.lockToken);
    const out = await this.ctx.scripts.run<number[]>('releaseJobs', [k.active, k.waiting, k.events, k.wake, k.meta, k.delayed], args);
    return out.map((c) => (c === 1 ? 'released' : c === 2 ? 'cancelled' : c === ScriptErrorCode.LeaseLost ? 'lease_lost' : 'not_found') as ReleaseOutcome);
  }

  async progress(queue: string, id: string, lockToken: string, workerId: string, progress: Json | undefined, logs: { level: string; message: string }[]) {
    const k = this.ctx.keys(queue);
    const args: (string | number)[] = [k.base, id, lockToken, workerId, progress === undefined ? '' : JSON.stringify(progress)];
    for (const l of logs) args.push(`${l.level}|${l.message}`);
    const code = await this.ctx.scripts.run<number>('updateProgress', [k.events], args);
    if (code !== 1) throw errorFromCode(code, id);
  }

  async cancel(queue: string, id: string): Promise<JobStatus> {
    const k = this.ctx.keys(queue);
    const [code, status] = await this.ctx.scripts.run<[number, string]>(
      'cancelJob',
      [k.waiting, k.delayed, k.events, k.meta],
      [k.base, id, cancelChannel(this.ctx.prefix)],
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
    const k = this.ctx.keys(queue);
    const [[code, status], job] = await this.ctx.runAndRead<[number, string]>(
      'cancelJob',
      [k.waiting, k.delayed, k.events, k.meta],
      [k.base, id, cancelChannel(this.ctx.prefix)],
      queue,
      id,
    );
    if (code < 0 || !job) throw errorFromCode(code < 0 ? code : ScriptErrorCode.JobNotFound, id, status, 'cancel');
    return { status: status as JobStatus, job };
  }

  async promoteDelayed(queue: string, limit: number) {
    const k = this.ctx.keys(queue);
    const [promoted, nextInMs] = await this.ctx.scripts.run<[number, number]>(
      'promoteDelayed',
      [k.delayed, k.waiting, k.failed, k.events, k.wake],
      [k.base, limit],
    );
    return { promoted, nextInMs };
  }

  async reapExpired(queue: string, limit: number) {
    const k = this.ctx.keys(queue);
    const [reaped, nextInMs] = await this.ctx.scripts.run<[number, number]>(
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
    return this.ctx.readJob(queue, id);
  }

  /**
   * The cheap part of a job hash: its status and the worker that last claimed
   * it (one HMGET, no payload). Used to find which queue holds a job id.
   * @returns null when this queue holds no such job.
   */
  async jobBrief(queue: string, id: string): Promise<JobBrief | null> {
    const [s, w, ll] = await this.ctx.redis.hmget(this.ctx.keys(queue).base + 'job:' + id, 's', 'w', 'll');
    if (s === null) return null;
    // `ll`: the lease length of an external claim (lua/claimJobs-8.lua).
    return ll ? { status: s, workerId: w || null, leaseMs: Number(ll) } : { status: s, workerId: w || null };
  }

}

