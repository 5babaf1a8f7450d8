import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { ClaimedJob, SluiceClient } from './client';
import { ForbiddenError, LeaseLostError, NotFoundError, UnauthorizedError, ValidationFailedError } from './errors';
import { backoffMs, sleep } from './transport';

/** What a handler gets besides the job. */
export interface JobContext {
  /** Aborted when a cancel was requested (reason {@link JobCancelledError}), the lease was lost ({@link LeaseLostError}) or the worker stops ({@link WorkerStoppingError}). */
  signal: AbortSignal;
  /** A number 0..100 or a small JSON object; sent with the next heartbeat (the last one before completing). */
  progress(p: number | Record<string, unknown>): void;
  /** A log line (GET /jobs/:id/logs), sent with the next heartbeat. Never put secrets in it. */
  log(line: string): void;
  workerId: string;
}

/** A job handler: its return value (any JSON) is the job's result; a throw fails the attempt. */
export type Handler = (job: ClaimedJob, ctx: JobContext) => unknown;

/** Thrown by a handler: the job fails without retry (straight to the dead-letter queue). Any error with `retryable: false` does too. */
export class UnrecoverableError extends Error {
  override name = 'UnrecoverableError';
  readonly retryable = false;
}
/** Another name for {@link UnrecoverableError}. */
export const PermanentError = UnrecoverableError;

/** `ctx.signal`'s reason when a client cancelled the running job. */
export class JobCancelledError extends Error {
  override name = 'JobCancelledError';
}
/** `ctx.signal`'s reason when the worker stopped and its grace ran out. */
export class WorkerStoppingError extends Error {
  override name = 'WorkerStoppingError';
}

export type WorkerLog = (level: 'info' | 'warn' | 'error', message: string) => void;

export interface ExternalWorkerOptions {
  client: SluiceClient;
  /** An external queue (`PUT /queues/:name {external: true}`). */
  queue: string;
  /** By job type. A job of another type fails without retry. */
  handlers: Record<string, Handler>;
  /** Jobs run at once (default 1). */
  concurrency?: number;
  /** Lease asked at claim, ms (default 30000); heartbeats every third of it. */
  leaseMs?: number;
  /** Long poll per claim, ms, ≤ 30000 (default 20000). */
  waitMs?: number;
  /** On stop: time running jobs get before they are aborted and released (attempt not used), ms (default 30000). */
  graceMs?: number;
  /** Default `ts-<host>-<pid>-<random>`. */
  workerId?: string;
  /** Where the worker's own lines go (default console; never payloads, results or keys). */
  log?: WorkerLog;
}

interface Running {
  job: ClaimedJob;
  abort: AbortController;
  /** Reported (complete/fail/release sent) or dropped (lease lost): nothing more is sent. */
  settled: boolean;
  progress?: number | Record<string, unknown>;
  logs: string[];
  timer?: NodeJS.Timeout;
  /** Resolves when the handler has returned and the outcome was reported. */
  done: Promise<void>;
}

const FATAL = [UnauthorizedError, ForbiddenError, NotFoundError, ValidationFailedError];

/**
 * Runs handlers for the jobs of one external queue (API.md "External worker
 * protocol"): claims with a long poll while a slot is free, heartbeats every
 * `leaseMs/3` per job (with its progress and log lines), completes with the
 * handler's result or fails with its error (retryable unless
 * {@link UnrecoverableError}). A cancel request, a lost lease or the end of
 * the stop grace aborts `ctx.signal`; the handler's result is then dropped.
 * A lost lease means the job is someone else's: nothing is reported.
 */
export class ExternalWorker {
  readonly workerId: string;
  private readonly o: Required<Omit<ExternalWorkerOptions, 'workerId'>>;
  private readonly running = new Map<string, Running>();
  private readonly claimAbort = new AbortController();
  private stopping = false;
  private graceMs: number;
  private hurry: () => void = () => {};
  private readonly hurried = new Promise<void>((r) => (this.hurry = r));
  private slotFreed: () => void = () => {};
  private loop?: Promise<void>;

  constructor(opts: ExternalWorkerOptions) {
    this.workerId = opts.workerId ?? `ts-${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
    this.o = { concurrency: 1, leaseMs: 30_000, waitMs: 20_000, graceMs: 30_000, log: defaultLog, ...opts };
    if (!Number.isInteger(this.o.concurrency) || this.o.concurrency < 1) throw new RangeError('concurrency must be an integer ≥ 1');
    this.graceMs = this.o.graceMs;
  }

  /** Jobs running now. */
  get active(): number {
    return this.running.size;
  }

  /**
   * Starts claiming. The promise resolves once the worker has stopped ({@link stop}) and settled its jobs;
   * it rejects when the server refuses the claim for good (401, 403, 404, 400: a wrong key, role or queue).
   */
  start(): Promise<void> {
    this.loop ??= this.run();
    return this.loop;
  }

  /**
   * Stops claiming (ends the long poll), waits up to `graceMs` for running jobs, then aborts the rest and releases
   * them (`POST /jobs/:id/release`: back to waiting with their attempt not used; they run again elsewhere). A second
   * call skips the rest of the grace.
   * Resolves when the worker has stopped.
   */
  async stop(opts: { graceMs?: number } = {}): Promise<void> {
    if (this.stopping) {
      this.hurry();
    } else {
      this.stopping = true;
      if (opts.graceMs !== undefined) this.graceMs = opts.graceMs;
      this.o.log('info', `stopping: no more claims; ${this.running.size} job(s) running get ${this.graceMs} ms`);
      this.claimAbort.abort(new WorkerStoppingError('stopping'));
      this.slotFreed();
    }
    await this.loop?.catch(() => {});
  }

  /** SIGTERM/SIGINT call {@link stop} (a second signal skips the grace). Returns a function that removes the handlers. */
  installSignalHandlers(signals: NodeJS.Signals[] = ['SIGTERM', 'SIGINT']): () => void {
    const on = (sig: NodeJS.Signals) => {
      this.o.log('info', `${sig}`);
      void this.stop();
    };
    for (const s of signals) process.on(s, on);
    const off = () => signals.forEach((s) => process.off(s, on));
    void this.start().then(off, off);
    return off;
  }

  private async run(): Promise<void> {
    const { queue, concurrency, leaseMs, waitMs } = this.o;
    this.o.log('info', `worker ${this.workerId} claiming from queue ${queue}, concurrency ${concurrency}, lease ${leaseMs} ms`);
    let failures = 0;
    let fatal: unknown;
    while (!this.stopping) {
      const free = concurrency - this.running.size;
      if (free <= 0) {
        await new Promise<void>((r) => (this.slotFreed = r));
        continue;
      }
      try {
        const jobs = await this.o.client.claim(queue, { workerId: this.workerId, max: free, waitMs, leaseMs }, { signal: this.claimAbort.signal });
        failures = 0;
        for (const job of jobs) this.runJob(job);
      } catch (e) {
        if (this.stopping) break;
        if (FATAL.some((c) => e instanceof c)) {
          this.o.log('error', `claim refused: ${(e as Error).message}; stopping`);
          fatal = e;
          this.stopping = true;
          break;
        }
        failures++;
        const wait = backoffMs(Math.min(failures, 8), { max: 0, baseMs: 500, maxMs: 30_000 });
        this.o.log('warn', `claim failed (${(e as Error).message}); again in ${wait} ms`);
        await sleep(wait, this.claimAbort.signal).catch(() => {});
      }
    }
    await this.drain();
    if (fatal) throw fatal;
  }

  /** Waits for running jobs up to the grace, then releases the rest (their attempt is not counted). */
  private async drain(): Promise<void> {
    if (this.running.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      const grace = new Promise<void>((r) => (timer = setTimeout(r, this.graceMs)));
      await Promise.race([Promise.all([...this.running.values()].map((r) => r.done)), grace, this.hurried]);
      clearTimeout(timer);
    }
    const late = [...this.running.values()];
    await Promise.all(late.map((r) => this.report(r, 'release', {}, new WorkerStoppingError('worker shutting down'))));
    this.o.log('info', `worker ${this.workerId} stopped (${late.length} job(s) handed back)`);
  }

  private runJob(job: ClaimedJob): void {
    const r: Running = { job, abort: new AbortController(), settled: false, logs: [], done: Promise.resolve() };
    this.running.set(job.id, r);
    r.done = this.execute(r).finally(() => {
      clearTimeout(r.timer);
      this.running.delete(job.id);
      this.slotFreed();
    });
  }

  private async execute(r: Running): Promise<void> {
    const { job } = r;
    const handler = Object.hasOwn(this.o.handlers, job.type) ? this.o.handlers[job.type] : undefined;
    if (!handler) {
      await this.report(r, 'fail', { message: `no handler for job type '${job.type}' in this worker`, retryable: false });
      return;
    }
    this.scheduleHeartbeat(r);
    const ctx: JobContext = {
      signal: r.abort.signal,
      workerId: this.workerId,
      progress: (p) => void (r.progress = p),
      log: (line) => void r.logs.push(String(line)),
    };
    let result: unknown;
    try {
      result = await handler(job, ctx);
    } catch (e) {
      const err = e instanceof Error ? e : new Error(String(e));
      const retryable = (e as { retryable?: unknown })?.retryable !== false;
      await this.report(r, 'fail', { message: err.message || err.name, stack: err.stack, retryable });
      return;
    }
    if (r.settled) return;
    if (r.progress !== undefined || r.logs.length > 0) await this.beat(r);
    await this.report(r, 'complete', { result });
  }

  private scheduleHeartbeat(r: Running): void {
    r.timer = setTimeout(async () => {
      await this.beat(r);
      if (!r.settled) this.scheduleHeartbeat(r);
    }, Math.max(1, Math.floor(this.o.leaseMs / 3)));
  }

  /** One heartbeat with the pending progress and log lines; handles cancelRequested and a lost lease. */
  private async beat(r: Running): Promise<void> {
    if (r.settled) return;
    const { progress, logs } = r;
    r.progress = undefined;
    r.logs = [];
    try {
      const res = await this.o.client.heartbeat(r.job.id, { lockToken: r.job.lockToken, progress, logs: logs.length ? logs : undefined });
      if (res.cancelRequested && !r.settled) {
        this.o.log('info', `job ${r.job.id}: cancel requested`);
        await this.report(r, 'fail', { message: 'cancelled', retryable: false }, new JobCancelledError('cancelled'));
      }
    } catch (e) {
      if (e instanceof LeaseLostError) {
        if (!r.settled) this.o.log('warn', `job ${r.job.id}: lease lost; dropping it`);
        r.settled = true;
        r.abort.abort(e);
        return;
      }
      // Sent again with the next heartbeat.
      if (r.progress === undefined) r.progress = progress;
      r.logs.unshift(...logs);
      this.o.log('warn', `job ${r.job.id}: heartbeat failed (${(e as Error).message})`);
    }
  }

  /**
   * Sends complete, fail or release once per job (later outcomes are dropped); aborts the handler's signal with
   * `abortReason` first when given. A lost lease or an unreachable server is logged: the lease expires and the job runs again.
   */
  private async report(r: Running, outcome: 'complete' | 'fail' | 'release', body: { result?: unknown; message?: string; stack?: string; retryable?: boolean }, abortReason?: Error): Promise<void> {
    if (r.settled) return;
    r.settled = true;
    clearTimeout(r.timer);
    if (abortReason) r.abort.abort(abortReason);
    const { id, lockToken } = r.job;
    try {
      const job =
        outcome === 'complete'
          ? await this.o.client.complete(id, { lockToken, result: body.result })
          : outcome === 'release'
            ? await this.o.client.release(id, { lockToken })
            : await this.o.client.fail(id, { lockToken, error: { message: body.message ?? 'failed', stack: body.stack }, retryable: body.retryable });
      this.o.log('info', `job ${id} (${r.job.type}): ${outcome} -> ${job.status}`);
    } catch (e) {
      const why = e instanceof LeaseLostError ? 'lease lost; the job is someone else’s now' : `${(e as Error).message}; its lease will expire and it runs again`;
      this.o.log('warn', `job ${id}: ${outcome} not reported (${why})`);
    }
  }
}

const defaultLog: WorkerLog = (level, message) => {
  const line = `[sluice-worker] ${level} ${message}`;
  if (level === 'info') console.log(line);
  else console.error(line);
};
