import type { JobDependency, Json } from './job';

/**
 * What a handler receives besides its payload. `signal` aborts when the
 * attempt times out (`timeoutMs`), the job is cancelled, the lease is lost or
 * the worker shuts down past its grace period; `signal.reason` says which.
 */
export interface JobContext {
  jobId: string;
  queue: string;
  type: string;
  /** 1-based attempt number (attempts counts executions started). */
  attempt: number;
  maxAttempts: number;
  /** Identifies this physical execution (never reused, even after a release). */
  executionSeq: number;
  /** A flow job's dependencies with their status when it was claimed (API.md v1.2 "Workflows"); [] otherwise. */
  dependencies: JobDependency[];
  signal: AbortSignal;
  /** Records progress: a number 0..100 or a small JSON object. */
  progress(value: Json): Promise<void>;
  /** Appends a log line to the job's log (GET /jobs/:id/logs). */
  log(message: string, level?: 'debug' | 'info' | 'warn' | 'error'): void;
}

/** A job handler: returns the job's JSON result (or nothing). Throw to fail the attempt. */
export type JobHandlerFn = (payload: Record<string, Json>, ctx: JobContext) => Promise<Json | void> | Json | void;

/** Throw from a handler to fail the job without retrying (straight to the DLQ). */
export class UnrecoverableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnrecoverableError';
  }
}

/** Why an attempt's AbortSignal fired. */
export type AbortReason = 'timeout' | 'cancelled' | 'lease_lost' | 'shutdown';

/**
 * Map of job type to handler, filled once at boot.
 * @throws Error on a duplicate registration (boot must fail).
 */
export class HandlerMap {
  private readonly handlers = new Map<string, JobHandlerFn>();

  register(type: string, fn: JobHandlerFn, origin = 'unknown'): void {
    if (this.handlers.has(type)) throw new Error(`duplicate handler for job type "${type}" (second one in ${origin})`);
    this.handlers.set(type, fn);
  }

  get(type: string): JobHandlerFn | undefined {
    return this.handlers.get(type);
  }

  types(): string[] {
    return [...this.handlers.keys()].sort();
  }
}

/** How a worker's hold on an attempt ended (reported to metrics; see src/workers/runtime). */
export type AttemptOutcome = 'completed' | 'failed' | 'timeout' | 'cancelled' | 'lease_lost' | 'released';
