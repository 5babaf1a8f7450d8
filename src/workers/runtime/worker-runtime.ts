import { computeBackoffDelay } from '../../core/backoff';
import { SluiceError } from '../../core/errors';
import { AbortReason, HandlerMap, JobContext, UnrecoverableError, type AttemptOutcome } from '../../core/handler';
import type { Json, WorkerJob } from '../../core/job';
import { silentLogger as silent, type Logger } from '../../core/logger';
import type { FailInput, JobStore, QueueStore, StoreConnection, WakeWaiter, WorkerClaimResult } from '../../core/ports';
import { context } from '@opentelemetry/api';
import { endProcess, ProcessTrace, recordClaims, spanClock, startProcess } from '../../telemetry/job-spans';
import { tracingEnabled } from '../../telemetry/spans';

export type { Logger };

/** The stores a worker runtime uses (a RedisStores from createRedisStores fits). */
export interface WorkerStores {
  jobs: JobStore;
  queues: QueueStore;
  connection: StoreConnection;
}

export interface WorkerRuntimeOptions {
  workerId: string;
  /** Queue names in priority order; ['*'] = every known queue. */
  queues: string[];
  concurrency: number;
  /** Lease length, ms (LOCK_TTL_MS). */
  leaseMs: number;
  /** Lease renewal period, ms; must be < leaseMs. */
  heartbeatIntervalMs: number;
  /** Time active jobs get on stop() before they are aborted and released, ms. */
  shutdownGraceMs: number;
  /** Longest idle block before a safety-net claim, ms. Default 5000. */
  maxIdleWaitMs?: number;
  /** How often `*` re-reads the queue registry, ms. Default 1000. */
  queueRefreshMs?: number;
  /** Uniform [0,1) source for backoff jitter. */
  random?: () => number;
  /** Called on every heartbeat tick (worker registry). */
  onHeartbeat?: (active: number) => Promise<void>;
  /**
   * Observer hooks (metrics), kept framework-free; must not throw. `type`:
   * the job's type; `waitMs`: job creation (the UUIDv7 id's timestamp) →
   * this attempt's start.
   */
  onJobStarted?: (queue: string, type: string, waitMs: number) => void;
  /** An attempt's hold ended; `durationMs` since it started. */
  onJobFinished?: (queue: string, type: string, outcome: AttemptOutcome, durationMs: number) => void;
}

export type { AttemptOutcome };

/** Creation time (epoch ms) of a UUIDv7 job id: its first 48 bits. */
function uuidV7Ms(id: string): number {
  return parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
}

interface Running {
  queue: string;
  job: WorkerJob;
  /** Created on first use of ctx.signal: most handlers never read it. */
  controller?: AbortController;
  abortReason?: AbortReason;
  timer?: NodeJS.Timeout;
  /** The attempt's outcome is decided (acked, failed, released or lost). */
  settled: boolean;
  done: Promise<void>;
  /** performance.now() at start, for onJobFinished. */
  startedAt: number;
  /** The attempt's `sluice.process` span, only while an OpenTelemetry SDK is registered. */
  trace?: ProcessTrace;
}

/** While draining for a job that must run alone, how often to check it is still waiting, ms. */
const ISOLATE_RECHECK_MS = 500;

/**
 * An attempt that ended here whose outcome (complete, fail, release) has not
 * reached Redis yet. It is sent again, with the same lock token, until Redis
 * answers, or until its lease has certainly expired (then the reaper owns the
 * job and re-delivers it), or, while stopping, until the drain deadline.
 */
interface Ack {
  queue: string;
  id: string;
  lockToken: string;
  /** The lease's end as last renewed (epoch ms, Redis clock). */
  leaseExpiresAt: number;
}

/** First wait before an ack is sent again, ms; doubled per try up to {@link ACK_RETRY_MAX_MS}. */
const ACK_RETRY_MIN_MS = 100;
const ACK_RETRY_MAX_MS = 2000;
/**
 * How long after its lease's end an ack is still sent again, ms. Past the
 * lease a late ack is still accepted until the reaper runs, and the lease's
 * end is on Redis's clock, not this host's: give both some room.
 */
const ACK_LEASE_SLACK_MS = 2000;
/** At shutdown, the least time releases and acks get after the grace period, ms. */
const DRAIN_MIN_MS = 1000;

/** Resolves when `p` settles or at `deadline` (epoch ms), whichever comes first; never rejects. */
async function until(p: Promise<unknown>, deadline: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([p.catch(() => undefined), new Promise<void>((r) => (timer = setTimeout(r, Math.max(0, deadline - Date.now()))))]);
  clearTimeout(timer);
}

/** A definite answer of the store (lease lost, not found, wrong state), as opposed to Redis not answering. */
function isStoreAnswer(e: unknown): boolean {
  return e instanceof SluiceError;
}

/**
 * A claim that has not answered after this long stops holding up the other
 * queues, ms. A claim answers in milliseconds; this long means the node that
 * holds its queue is unreachable, e.g. a Redis Cluster shard whose master
 * died and whose replica has not taken over yet: ioredis holds the call
 * until then, or until its 16 redirections (100 ms apart) run out and it
 * fails with "Connection is closed", and a failover takes about two
 * cluster-node-timeouts (15 s by default). Each queue of the failed shard
 * costs the loop this long once per failover; a claim that is merely slow
 * (a busy host) only has its jobs started a little later ({@link adoptLate}).
 */
const CLAIM_STALL_MS = 500;
/** After a queue's claim failed, how long before that queue is tried again, ms. */
const CLAIM_RETRY_MS = 250;
/**
 * With `*`, how long a queue whose claim found nothing to take (drained,
 * paused, at its limit) is left out of the passes of a busy worker, ms.
 * Each pass claimed from every known queue, and an empty claim costs Redis
 * a whole script (tens of µs) and Node a round trip: with a few idle queues
 * beside a busy one that was most of the processing cost. A job that arrives
 * in such a queue meanwhile starts at most this much later; once the worker
 * goes idle it blocks on every queue's wake list, which holds the tokens of
 * whatever arrived since (the empty claim emptied it), and claims them all.
 * Only with `*`: an explicit QUEUES list is in priority order, which a
 * skipped queue would not keep.
 */
const EMPTY_RECHECK_MS = 20;


/**
 * Runs handlers for claimed jobs: the worker role without the framework.
 *
 * Loop: claim up to the free slots from each queue in priority order; when
 * nothing is claimable, block on the queues' wake lists (BLPOP) until a token
 * arrives or the next delayed job / rate-limit window is due. Completions of
 * one tick are acked in one script call per queue; all leases are renewed in
 * one call per queue per heartbeat interval. Every ack carries the lock token,
 * so a worker that lost its lease cannot overwrite the new holder's work.
 */
export class WorkerRuntime {
  private readonly running = new Map<string, Running>();
  /** Completions of this tick, per queue (one completeJobs call each). */
  private readonly acks = new Map<string, (Ack & { result: Json | undefined })[]>();
  private readonly inflight = new Set<Promise<unknown>>();
  /** Outcomes sent and not yet answered by Redis (see {@link Ack}), by job id. */
  private readonly unacked = new Map<string, Ack>();
  /** Queues whose extendLocks call has not answered yet: a stalled Redis must not pile heartbeats up. */
  private readonly beating = new Set<string>();
  private registryBeating = false;
  private ackScheduled = false;
  private stopping = false;
  /** While stopping: when acks and releases stop being sent again (epoch ms). */
  private drainDeadline = Infinity;
  private loopDone: Promise<void> = Promise.resolve();
  private slotWaiter: (() => void) | null = null;
  private heartbeatTimer?: NodeJS.Timeout;
  private knownQueues: string[] = [];
  private queuesReadAt = 0;
  private readonly externalQueues = new Set<string>();
  private redisDown = false;
  /**
   * Queues whose last claim failed, with the time to try again (epoch ms),
   * and queues whose claim is answering late: on a Redis Cluster one shard
   * can be down while the others serve, so such a queue is set aside and
   * probed in the background while the loop claims from the others.
   */
  private readonly failing = new Map<string, number>();
  private readonly lateClaims = new Set<string>();
  /** The job held now must run alone (claim said `solo`). */
  private soloRunning = false;
  /** A job that must run alone is next: claim nothing until idle (claim said `isolate`). */
  private isolating = false;
  /**
   * `*` only: queues whose last claim took nothing, with when they are
   * claimed again (epoch ms) and when their claim's hint (next delayed job,
   * rate-limit window) is due: see {@link EMPTY_RECHECK_MS}. Cleared when the
   * worker blocks on the wake lists.
   */
  private readonly emptyQueues = new Map<string, { until: number; hintAt: number }>();
  private readonly random: () => number;
  private readonly store: JobStore;
  private readonly queues: QueueStore;
  private readonly connection: StoreConnection;
  private offClose: (() => void) | null = null;

  constructor(
    stores: WorkerStores,
    private readonly handlers: HandlerMap,
    private readonly waiter: WakeWaiter,
    readonly options: WorkerRuntimeOptions,
    private readonly log: Logger = silent,
  ) {
    this.random = options.random ?? Math.random;
    this.store = stores.jobs;
    this.queues = stores.queues;
    this.connection = stores.connection;
  }

  /** Number of jobs this worker holds right now. */
  get activeCount(): number {
    return this.running.size;
  }

  /** Attempts ended here whose outcome Redis has not confirmed yet (acks being sent again during an outage). */
  get unackedCount(): number {
    return this.unacked.size;
  }

  get isStopping(): boolean {
    return this.stopping;
  }

  start(): void {
    this.offClose = this.connection.onClose(this.onRedisClose);
    this.loopDone = this.loop().catch((e) => this.log.error({ err: e }, 'worker loop crashed'));
    this.heartbeatTimer = setInterval(() => void this.heartbeat(), this.options.heartbeatIntervalMs);
    this.heartbeatTimer.unref?.();
  }

  /** Aborts the attempt of a job held here (cancel announced over pub/sub). */
  cancelRequested(jobId: string): void {
    const r = this.running.get(jobId);
    if (r) this.abort(r, 'cancelled');
  }

  /**
   * Graceful shutdown: stop claiming, give active jobs `shutdownGraceMs`,
   * then abort the rest and release them (attempt refunded), flush acks.
   * Acks and releases Redis has not answered are sent again until the grace
   * period ends (at least {@link DRAIN_MIN_MS} after the releases): a stalled
   * Redis cannot hold the shutdown longer, and what is still unconfirmed then
   * is left to the reaper (the leases expire; at-least-once).
   * Resolves when nothing is held any more, or at that deadline.
   */
  async stop(): Promise<void> {
    if (this.stopping) return this.stopped;
    this.stopping = true;
    this.stopped = this.drain();
    return this.stopped;
  }

  private stopped: Promise<void> = Promise.resolve();

  private async drain(): Promise<void> {
    const graceEnd = Date.now() + this.options.shutdownGraceMs;
    // Acks already being retried get the grace period, and at least DRAIN_MIN_MS.
    this.drainDeadline = Math.max(graceEnd, Date.now() + DRAIN_MIN_MS);
    this.waiter.close();
    this.slotWaiter?.();
    // The loop ends at once (its waiter is closed), unless a claim is in
    // flight on a stalled Redis: that one answers only when Redis does.
    await until(this.loopDone, Math.max(graceEnd, Date.now() + DRAIN_MIN_MS));
    const pending = [...this.running.values()].map((r) => r.done);
    if (pending.length) {
      this.log.info({ active: pending.length, graceMs: this.options.shutdownGraceMs }, 'waiting for active jobs');
      await until(Promise.all(pending), graceEnd);
    }
    this.drainDeadline = Math.max(graceEnd, Date.now() + DRAIN_MIN_MS);
    const released = this.releaseAll('shutdown');
    this.track(released);
    await this.flushAcks();
    await until(Promise.allSettled([...this.inflight]), this.drainDeadline);
    if (this.unacked.size) {
      this.log.warn({ jobs: [...this.unacked.keys()].slice(0, 20), count: this.unacked.size }, 'stopping with outcomes redis has not confirmed: their leases expire and the reaper re-delivers them');
    }
    clearInterval(this.heartbeatTimer);
    this.offClose?.();
    this.offClose = null;
  }

  /**
   * ioredis keeps commands while it reconnects (resent or queued), so a claim
   * in flight when Redis goes away just hangs: follow the connection itself to
   * say at once that claiming is paused. The loop then claims nothing until
   * the connection is ready again, and says so on the first claim that works.
   */
  private readonly onRedisClose = (): void => {
    if (this.redisDown || this.stopping) return;
    this.redisDown = true;
    this.log.warn({}, 'redis connection lost: pausing claims');
  };

  // ---- claim loop -------------------------------------------------------

  private async loop(): Promise<void> {
    while (!this.stopping) {
      // Full, or running a job that must run alone: wait for a slot.
      if (this.running.size >= this.options.concurrency || (this.running.size > 0 && this.soloRunning)) {
        await new Promise<void>((r) => (this.slotWaiter = r));
        this.slotWaiter = null;
        continue;
      }
      // Draining to take a job that must run alone: wait for a slot, but look
      // again now and then — another worker may have taken that job, and then
      // there is no reason to stay drained (the next claim says `isolate` again
      // if it is still waiting at the head of its queue).
      if (this.running.size > 0 && this.isolating && !this.stopping) {
        let timer: NodeJS.Timeout | undefined;
        await new Promise<void>((r) => {
          this.slotWaiter = r;
          timer = setTimeout(r, ISOLATE_RECHECK_MS);
        });
        clearTimeout(timer);
        this.slotWaiter = null;
        if (this.running.size >= this.options.concurrency) continue;
      }
      this.soloRunning = false;
      this.isolating = false;
      const queues = await this.queueList();
      let claimed = 0;
      let answered = 0;
      let waitMs = this.options.maxIdleWaitMs ?? (this.options.queues.includes('*') ? 1000 : 5000);
      // Not while disconnected: the claim would wait in ioredis's offline queue.
      if (!this.connection.isReady()) {
        this.claimFailed(null, new Error(`redis connection is ${this.connection.state()}`));
        await new Promise((r) => setTimeout(r, CLAIM_RETRY_MS));
        continue;
      }
      const passAt = Date.now();
      for (const queue of queues) {
        const free = this.options.concurrency - this.running.size;
        if (free <= 0 || this.stopping) break;
        if (this.lateClaims.has(queue)) continue;
        const empty = this.emptyQueues.get(queue);
        if (empty) {
          if (empty.until > passAt) {
            // Not claimed now: its hint still bounds the idle wait below.
            if (empty.hintAt < Infinity) waitMs = Math.min(waitMs, Math.max(1, empty.hintAt - passAt));
            continue;
          }
          this.emptyQueues.delete(queue);
        }
        const retryAt = this.failing.get(queue);
        if (retryAt !== undefined && retryAt > Date.now()) continue;
        let res: WorkerClaimResult | null;
        try {
          // A queue whose claim failed is probed for one job, without waiting for the answer.
          res = retryAt === undefined ? await this.claim(queue, free, CLAIM_STALL_MS) : await this.claim(queue, 1, 0);
        } catch (e) {
          this.claimFailed(queue, e);
          continue;
        }
        if (!res) continue; // answering late: its jobs start when it answers (adoptLate)
        answered++;
        this.claimAnswered(queue);
        if (res.block === 'external') this.externalQueues.add(queue);
        if (this.stopping) {
          await this.giveBack(queue, res.jobs);
          return;
        }
        for (const job of res.jobs) this.startJob(queue, job);
        claimed += res.jobs.length;
        if (res.jobs.length === 0 && res.retryInMs !== 0 && res.block !== 'isolate' && res.block !== 'external' && this.options.queues.includes('*')) {
          this.emptyQueues.set(queue, { until: passAt + EMPTY_RECHECK_MS, hintAt: res.retryInMs > 0 ? passAt + res.retryInMs : Infinity });
        }
        if (res.retryInMs >= 0) waitMs = Math.min(waitMs, Math.max(1, res.retryInMs));
        if (res.block === 'solo') this.soloRunning = true;
        if (res.block === 'isolate') this.isolating = true;
        // Claim nothing else now: a solo job runs alone; isolate means drain first.
        if (res.block === 'solo' || res.block === 'isolate') {
          claimed = Math.max(claimed, 1);
          break;
        }
      }
      if (claimed > 0 || this.stopping) continue;
      const aside = (q: string) => this.failing.has(q) || this.lateClaims.has(q);
      const healthy = queues.filter((q) => !aside(q));
      if (answered === 0 && healthy.length < queues.length) {
        // Nothing answered (Redis unreachable, or every queue set aside): pause, then try again.
        await new Promise((r) => setTimeout(r, CLAIM_RETRY_MS));
        continue;
      }
      // Block on the queues that answered; come back soon for the ones set aside.
      if (healthy.length < queues.length) waitMs = Math.min(waitMs, CLAIM_RETRY_MS);
      // Blocking covers the queues left out as empty: their wake lists say what arrived since.
      this.emptyQueues.clear();
      await this.waiter.wait(healthy, waitMs);
    }
  }

  /**
   * Claims from one queue; when it has not answered within `stallMs`, returns
   * null and lets it run on: a late answer's jobs are started then
   * ({@link adoptLate}), so a queue whose node is unreachable does not hold
   * up the queues on other nodes.
   * @throws what the claim threw, when it fails within `stallMs`.
   */
  private async claim(queue: string, free: number, stallMs: number): Promise<WorkerClaimResult | null> {
    const claimStart = tracingEnabled() ? spanClock() : 0;
    const p = this.store.claimForWorker(queue, free, this.options.leaseMs, this.options.workerId, this.running.size === 0).then((res) => {
      if (claimStart && res.jobs.length) recordClaims(queue, res.jobs, claimStart, this.options.workerId, false);
      return res;
    });
    let timer: NodeJS.Timeout | undefined;
    const stalled = new Promise<null>((r) => (timer = setTimeout(() => r(null), stallMs)));
    const res = await Promise.race([p, stalled]).finally(() => clearTimeout(timer));
    if (res) return res;
    if (stallMs > 0) this.log.debug({ queue, stallMs }, 'claim not answered yet: the other queues go on');
    this.lateClaims.add(queue);
    this.track(
      p.then(
        (late) => this.adoptLate(queue, late),
        (e) => {
          this.lateClaims.delete(queue);
          this.claimFailed(queue, e);
        },
      ),
    );
    return null;
  }

  /**
   * The answer of a claim that came after the loop went on: its jobs are
   * leased to this worker, so they start if slots are free; the others are
   * given back (released, attempt refunded), as are all of them while
   * stopping, or a job that must run alone (the loop decides that one).
   */
  private async adoptLate(queue: string, res: WorkerClaimResult): Promise<void> {
    this.lateClaims.delete(queue);
    this.claimAnswered(queue);
    if (res.block === 'external') this.externalQueues.add(queue);
    // Nothing starts beside a job that runs alone, or while draining for one.
    const alone = res.block === 'solo' || (this.running.size > 0 && (this.soloRunning || this.isolating));
    const fit = this.stopping || alone ? 0 : Math.max(0, this.options.concurrency - this.running.size);
    const start = res.jobs.slice(0, fit);
    for (const job of start) this.startJob(queue, job);
    const back = res.jobs.slice(start.length);
    if (back.length) this.log.info({ queue, started: start.length, released: back.length }, 'late claim answered: jobs with no free slot given back');
    await this.giveBack(queue, back).catch((e) => this.log.warn({ queue, err: (e as Error).message }, 'give-back failed: the reaper will recover these jobs'));
  }

  /** A claim failed (`queue` null: the connection is down): set the queue aside, say so once per outage. */
  private claimFailed(queue: string | null, e: unknown): void {
    if (queue !== null) this.failing.set(queue, Date.now() + CLAIM_RETRY_MS);
    if (!this.redisDown) this.log.warn({ queue, err: (e as Error)?.message }, 'claim failed: redis unavailable, pausing claims');
    else this.log.debug({ queue, err: (e as Error)?.message }, 'claim failed');
    this.redisDown = true;
  }

  /** A claim answered: the queue is back, and once no queue is set aside, so is Redis. */
  private claimAnswered(queue: string): void {
    this.failing.delete(queue);
    if (this.redisDown && this.failing.size === 0 && this.lateClaims.size === 0) {
      this.redisDown = false;
      this.log.info({}, 'redis is back: claiming again');
    }
  }

  private async queueList(): Promise<string[]> {
    if (!this.options.queues.includes('*')) return this.options.queues;
    const now = Date.now();
    if (now - this.queuesReadAt >= (this.options.queueRefreshMs ?? 1000)) {
      try {
        this.knownQueues = await this.queues.list();
        this.queuesReadAt = now;
        // Re-checked on every refresh: a queue may stop being external.
        this.externalQueues.clear();
      } catch {
        /* keep the previous list while Redis is unreachable */
      }
    }
    return this.knownQueues.filter((q) => !this.externalQueues.has(q));
  }

  /** Jobs claimed while stopping are handed straight back, never started. */
  private async giveBack(queue: string, jobs: WorkerJob[]): Promise<void> {
    if (!jobs.length) return;
    await this.sendReleases(
      queue,
      jobs.map((j) => this.pend(queue, j)),
    );
  }

  // ---- running one job ----------------------------------------------------

  private startJob(queue: string, job: WorkerJob): void {
    // The same job under a new lease (its old one expired during a stall and
    // it was claimed again): the old attempt's lease is gone, end it first so
    // that it cannot drop the new attempt's entry when it settles.
    const previous = this.running.get(job.id);
    if (previous) this.abort(previous, 'lease_lost');
    const r: Running = { queue, job, settled: false, done: Promise.resolve(), startedAt: performance.now() };
    if (tracingEnabled()) r.trace = startProcess(queue, job, job.maxAttempts, this.options.workerId);
    this.running.set(job.id, r);
    this.options.onJobStarted?.(queue, job.type, Date.now() - uuidV7Ms(job.id));
    r.timer = setTimeout(() => this.abort(r, 'timeout'), job.timeoutMs);
    r.done = this.execute(r);
  }

  private async execute(r: Running): Promise<void> {
    const { job } = r;
    const handler = this.handlers.get(job.type);
    try {
      if (!handler) throw new Error(`no handler registered for job type "${job.type}" on worker ${this.options.workerId}`);
      // Traced: the handler runs with its span active, so spans it makes are children of it.
      const result = await (r.trace ? context.with(r.trace.context, handler, undefined, job.payload, this.context(r)) : handler(job.payload, this.context(r)));
      this.succeed(r, result === undefined ? null : (result as Json));
    } catch (e) {
      this.failAttempt(r, e);
    }
  }

  private context(r: Running): JobContext {
    const { job } = r;
    return {
      jobId: job.id,
      queue: r.queue,
      type: job.type,
      attempt: job.attempts,
      maxAttempts: job.maxAttempts,
      executionSeq: job.executionSeq,
      dependencies: job.dependencies ?? [],
      get signal() {
        if (!r.controller) {
          r.controller = new AbortController();
          if (r.abortReason) r.controller.abort(r.abortReason);
        }
        return r.controller.signal;
      },
      progress: async (value: Json) => {
        if (r.settled) return;
        await this.store.progress(r.queue, job.id, job.lockToken, this.options.workerId, value, []);
      },
      log: (message: string, level = 'info') => {
        if (r.settled) return;
        this.track(
          this.store
            .progress(r.queue, job.id, job.lockToken, this.options.workerId, undefined, [{ level, message: String(message) }])
            .catch(() => undefined),
        );
      },
    };
  }

  /**
   * Ends the local hold of a job; frees its slot. Returns false if already settled.
   * @param error why the attempt failed (ends its span with status ERROR: the message only).
   */
  private settle(r: Running, outcome: AttemptOutcome, error?: { name: string; message: string; retryable: boolean }): boolean {
    if (r.settled) return false;
    r.settled = true;
    if (r.trace) {
      const retries = outcome === 'failed' || outcome === 'timeout' ? !!error?.retryable && r.job.attempts < r.job.maxAttempts : undefined;
      endProcess(r.trace.span, outcome, error, retries);
    }
    this.options.onJobFinished?.(r.queue, r.job.type, outcome, performance.now() - r.startedAt);
    clearTimeout(r.timer);
    if (this.running.get(r.job.id) === r) this.running.delete(r.job.id);
    const w = this.slotWaiter;
    this.slotWaiter = null;
    w?.();
    return true;
  }

  /** Records that the outcome of `job`'s attempt is on its way to Redis (see {@link Ack}). */
  private pend(queue: string, job: WorkerJob): Ack {
    const a: Ack = { queue, id: job.id, lockToken: job.lockToken, leaseExpiresAt: job.leaseExpiresAt };
    this.unacked.set(job.id, a);
    return a;
  }

  private succeed(r: Running, result: Json): void {
    if (!this.settle(r, 'completed')) return; // timed out, cancelled or lost meanwhile: result discarded
    let list = this.acks.get(r.queue);
    if (!list) this.acks.set(r.queue, (list = []));
    list.push({ ...this.pend(r.queue, r.job), result });
    if (!this.ackScheduled) {
      this.ackScheduled = true;
      setImmediate(() => void this.flushAcks());
    }
  }

  private failAttempt(r: Running, e: unknown): void {
    const err = e instanceof Error ? e : new Error(String(e));
    const retryable = !(err instanceof UnrecoverableError || err.name === 'UnrecoverableError');
    const message = err.message || err.name;
    if (!this.settle(r, 'failed', { name: err.name, message, retryable })) return;
    this.sendFail(r, message, retryable, 'error');
  }

  private abort(r: Running, reason: AbortReason): void {
    const timeout = `timeout: attempt ran longer than timeoutMs=${r.job.timeoutMs}`;
    // The span's error (a cancel or a shutdown is not one).
    const error = reason === 'timeout' ? { name: 'TimeoutError', message: timeout, retryable: true } : reason === 'lease_lost' ? { name: 'LeaseLostError', message: 'lease lost', retryable: true } : undefined;
    if (!this.settle(r, reason === 'shutdown' ? 'released' : reason, error)) return;
    r.abortReason = reason;
    r.controller?.abort(reason);
    if (reason === 'timeout') {
      this.sendFail(r, timeout, true, 'timeout');
    } else if (reason === 'cancelled') {
      this.sendFail(r, 'cancelled by client', false, 'cancelled');
    } else if (reason === 'lease_lost') {
      this.log.warn({ jobId: r.job.id, queue: r.queue }, 'lease lost: attempt abandoned');
    }
  }

  private sendFail(r: Running, message: string, retryable: boolean, reason: 'error' | 'timeout' | 'cancelled'): void {
    const delayMs = computeBackoffDelay(r.job.backoff, r.job.attempts, this.random);
    const input: FailInput = { error: message, retryable, delayMs, reason, workerId: this.options.workerId };
    this.track(this.sendFailAck(this.pend(r.queue, r.job), input));
  }

  /** failJob for one attempt, sent again while Redis does not answer (see {@link Ack}). */
  private async sendFailAck(a: Ack, input: FailInput): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await this.store.fail(a.queue, a.id, a.lockToken, input);
        this.unacked.delete(a.id);
        return;
      } catch (e) {
        if (isStoreAnswer(e)) {
          this.unacked.delete(a.id);
          // After a try that got no answer, the fail may have landed then: the job has moved on either way.
          this.log[attempt ? 'info' : 'warn']({ jobId: a.id, queue: a.queue, err: (e as Error).message, tries: attempt + 1 }, attempt ? 'fail answered after retries: the job has moved on (an earlier try may have landed)' : 'fail refused');
          return;
        }
        if (!(await this.retryLater('fail', [a], e, attempt)).length) return;
      }
    }
  }

  /**
   * After a call Redis did not answer (an error other than a store answer):
   * drops the acks whose lease has certainly expired (the reaper re-delivers
   * those jobs) or, while stopping, all of them once the drain deadline has
   * passed; waits before the next try (capped exponential backoff).
   * @returns the acks to send again (empty: give up).
   */
  private async retryLater<T extends Ack>(what: string, list: T[], e: unknown, attempt: number): Promise<T[]> {
    const now = Date.now();
    const late = now >= this.drainDeadline;
    const keep = late ? [] : list.filter((a) => now <= a.leaseExpiresAt + ACK_LEASE_SLACK_MS);
    if (keep.length < list.length) {
      const dropped = list.filter((a) => !keep.includes(a));
      for (const a of dropped) this.unacked.delete(a.id);
      this.log.warn(
        { what, queue: list[0].queue, jobs: dropped.map((a) => a.id).slice(0, 20), count: dropped.length, tries: attempt + 1, err: (e as Error).message },
        late ? `${what} not confirmed by redis before the shutdown deadline: the reaper re-delivers these jobs` : `${what} given up: leases expired while redis was unreachable; the reaper re-delivers these jobs`,
      );
    }
    if (!keep.length) return keep;
    if (attempt === 0) this.log.warn({ what, queue: list[0].queue, jobs: keep.length, err: (e as Error).message }, `${what} failed: redis unreachable, sending it again with the same lock tokens`);
    const wait = Math.min(ACK_RETRY_MIN_MS * 2 ** attempt, ACK_RETRY_MAX_MS);
    await new Promise((r) => setTimeout(r, Math.min(wait, Math.max(0, this.drainDeadline - now))));
    return keep;
  }

  private track(p: Promise<unknown>): void {
    this.inflight.add(p);
    void p.finally(() => this.inflight.delete(p));
  }

  /** Sends buffered completions: one completeJobs call per queue. */
  private async flushAcks(): Promise<void> {
    this.ackScheduled = false;
    const batches = [...this.acks];
    this.acks.clear();
    await Promise.all(
      batches.map(async ([queue, list]) => {
        const p = this.sendAcks(queue, list);
        this.track(p);
        await p;
      }),
    );
  }

  /**
   * One completeJobs call for `list`, sent again with the same lock tokens
   * while Redis does not answer (see {@link Ack}). A repeat of a complete that
   * landed but whose reply was lost answers `completed` (or `cancelled`) again
   * and changes nothing (lua/completeJobs-5.lua), so sending again is safe.
   */
  private async sendAcks(queue: string, list: (Ack & { result: Json | undefined })[]): Promise<void> {
    for (let attempt = 0; list.length; attempt++) {
      try {
        const out = await this.store.complete(queue, this.options.workerId, list);
        out.forEach((s, i) => {
          this.unacked.delete(list[i].id);
          if (s === 'lease_lost') this.log.warn({ jobId: list[i].id, queue, status: s, tries: attempt + 1 }, 'late ack refused: lease lost, result discarded');
          // Only a finished job leaves Redis: after a try that got no answer, most likely this very ack, then the mirror.
          else if (s === 'not_found') this.log[attempt ? 'info' : 'warn']({ jobId: list[i].id, queue, status: s, tries: attempt + 1 }, 'ack answered not_found: the job has left redis');
        });
        return;
      } catch (e) {
        list = await this.retryLater('ack', list, e, attempt);
      }
    }
  }

  // ---- leases ---------------------------------------------------------------

  /**
   * One extendLocks call per queue for every job held here. A queue whose
   * previous call has not answered (a stalled Redis) is skipped, so calls do
   * not pile up; a call that fails or times out changes nothing here (the job
   * runs on; only Redis's answer `lease_lost` ends an attempt).
   */
  private async heartbeat(): Promise<void> {
    const byQueue = new Map<string, Running[]>();
    for (const r of this.running.values()) {
      if (this.beating.has(r.queue)) continue;
      let l = byQueue.get(r.queue);
      if (!l) byQueue.set(r.queue, (l = []));
      l.push(r);
    }
    const tasks: Promise<unknown>[] = [...byQueue].map(async ([queue, list]) => {
      this.beating.add(queue);
      try {
        const { leaseExpiresAt, statuses } = await this.store.extendLeases(
          queue,
          list.map((r) => ({ id: r.job.id, lockToken: r.job.lockToken })),
          this.options.leaseMs,
        );
        statuses.forEach((s, i) => {
          const r = list[i];
          if (s === 'lease_lost') this.abort(r, 'lease_lost');
          else {
            r.job.leaseExpiresAt = leaseExpiresAt;
            if (s === 'cancel_requested') this.abort(r, 'cancelled');
          }
        });
      } catch (e) {
        this.log.warn({ queue, err: (e as Error).message }, 'heartbeat failed');
      } finally {
        this.beating.delete(queue);
      }
    });
    if (this.options.onHeartbeat && !this.registryBeating) {
      this.registryBeating = true;
      tasks.push(
        this.options
          .onHeartbeat(this.running.size)
          .catch(() => undefined)
          .finally(() => (this.registryBeating = false)),
      );
    }
    await Promise.all(tasks);
  }

  /** Aborts every held job and releases it (attempt refunded). */
  private async releaseAll(reason: AbortReason): Promise<void> {
    const byQueue = new Map<string, Ack[]>();
    for (const r of [...this.running.values()]) {
      if (!this.settle(r, 'released')) continue;
      r.abortReason = reason;
      r.controller?.abort(reason);
      let l = byQueue.get(r.queue);
      if (!l) byQueue.set(r.queue, (l = []));
      l.push(this.pend(r.queue, r.job));
    }
    await Promise.all([...byQueue].map(([queue, list]) => this.sendReleases(queue, list)));
  }

  /** One releaseJobs call, sent again while Redis does not answer (see {@link Ack}). */
  private async sendReleases(queue: string, list: Ack[]): Promise<void> {
    for (let attempt = 0; list.length; attempt++) {
      try {
        const out = await this.store.release(queue, this.options.workerId, list.map((a) => ({ id: a.id, lockToken: a.lockToken })));
        for (const a of list) this.unacked.delete(a.id);
        const refused = list.filter((_, i) => out[i] === 'lease_lost' || out[i] === 'not_found').map((a) => a.id);
        this.log.info({ queue, jobs: list.map((a) => a.id), refused: refused.length ? refused : undefined, tries: attempt + 1 }, 'released active jobs');
        return;
      } catch (e) {
        list = await this.retryLater('release', list, e, attempt);
      }
    }
  }
}
