import type { BackoffSpec } from './backoff';
import type { JobStatus } from './job-status';

/** JSON value accepted as payload, result or progress. */
export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/**
 * The job object of API.md. Times are epoch ms here; the API layer renders
 * them as ISO-8601 strings.
 */
export interface Job {
  id: string;
  queue: string;
  type: string;
  payload: Record<string, Json>;
  status: JobStatus;
  priority: number;
  attempts: number;
  maxAttempts: number;
  backoff: BackoffSpec;
  timeoutMs: number;
  idempotencyKey: string | null;
  /** The job's concurrency key (API.md v1.1 "Flow control per key"); null when it has none. */
  concurrencyKey: string | null;
  /** The flow the job belongs to (API.md v1.2 "Workflows"); null outside flows. */
  flowId: string | null;
  /** Its ref in that flow; null outside flows. */
  flowRef: string | null;
  progress: Json | null;
  result: Json | null;
  lastError: string | null;
  workerId: string | null;
  createdAt: number;
  runAt: number;
  startedAt: number | null;
  finishedAt: number | null;
  updatedAt: number;
  /** Number of executions started, including ones later refunded (release). */
  executionSeq: number;
  /** True while an active job has a pending cancel request. */
  cancelRequested: boolean;
  /**
   * Dead-letter group of a failed job as stored when it entered the DLQ
   * (src/core/error-fingerprint.ts); absent when not read from the DLQ copy
   * (the API computes it from lastError then: jobFingerprint).
   */
  fingerprint?: string | null;
}

/** A job held under a lease by the caller of claim. */
export interface ClaimedJob extends Job {
  lockToken: string;
  /** Lease expiry, epoch ms (Redis clock). */
  leaseExpiresAt: number;
  /**
   * W3C trace context the job was enqueued in (`00-<trace id>-<span id>-<flags>`;
   * the server's `sluice.enqueue` span when it traces), for the worker's
   * processing span to continue; null when the job carries none.
   */
  traceparent: string | null;
  /** W3C tracestate stored with {@link traceparent}; null when none. */
  tracestate: string | null;
  /**
   * A flow job's dependencies (API.md v1.2 "Workflows") with their status
   * when it was claimed; [] for a job outside flows.
   */
  dependencies: JobDependency[];
}

/** One dependency of a flow job, as a claim carries it. */
export interface JobDependency {
  ref: string;
  id: string;
  status: JobStatus;
}

/** The part of a claimed job a worker needs to run it (the lean claim reply). */
export type WorkerJob = Pick<
  ClaimedJob,
  'id' | 'type' | 'payload' | 'attempts' | 'maxAttempts' | 'backoff' | 'timeoutMs' | 'executionSeq' | 'lockToken' | 'leaseExpiresAt' | 'traceparent' | 'tracestate' | 'dependencies'
>;
