import type { BackoffSpec } from '../core/backoff';
import type { ClaimedJob, Job, Json } from '../core/job';

/** ISO-8601 UTC string of an epoch-ms time; null stays null. */
export function iso(ms: number | null | undefined): string | null {
  return ms === null || ms === undefined || !Number.isFinite(ms) ? null : new Date(ms).toISOString();
}

/** The API.md job object (times as ISO strings). `executionSeq` and `cancelRequested` are additions. */
export interface ApiJob {
  id: string;
  queue: string;
  type: string;
  payload: Record<string, Json>;
  status: string;
  priority: number;
  attempts: number;
  maxAttempts: number;
  backoff: BackoffSpec;
  timeoutMs: number;
  idempotencyKey: string | null;
  progress: Json | null;
  result: Json | null;
  lastError: string | null;
  workerId: string | null;
  createdAt: string | null;
  runAt: string | null;
  startedAt: string | null;
  finishedAt: string | null;
  updatedAt: string | null;
  executionSeq: number;
  cancelRequested: boolean;
}

/** Renders an engine Job (epoch ms) as the API job object. */
export function toApiJob(j: Job): ApiJob {
  return {
    id: j.id,
    queue: j.queue,
    type: j.type,
    payload: j.payload,
    status: j.status,
    priority: j.priority,
    attempts: j.attempts,
    maxAttempts: j.maxAttempts,
    backoff: j.backoff,
    timeoutMs: j.timeoutMs,
    idempotencyKey: j.idempotencyKey,
    progress: j.progress,
    result: j.result,
    lastError: j.lastError,
    workerId: j.workerId,
    createdAt: iso(j.createdAt),
    runAt: iso(j.runAt),
    startedAt: iso(j.startedAt),
    finishedAt: iso(j.finishedAt),
    updatedAt: iso(j.updatedAt),
    executionSeq: j.executionSeq,
    cancelRequested: j.cancelRequested,
  };
}

/** A claimed job as the external worker protocol returns it: the job plus its lease. */
export function toApiClaimedJob(j: ClaimedJob): ApiJob & { lockToken: string; leaseExpiresAt: string | null } {
  return { ...toApiJob(j), lockToken: j.lockToken, leaseExpiresAt: iso(j.leaseExpiresAt) };
}
