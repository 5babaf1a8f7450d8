import type { ClaimedJob, Job } from '../core/job';
import { jobFingerprint } from '../core/error-fingerprint';
import { clampTime } from '../core/job-options';
import { bareQueue } from '../core/project-queue';

/** First and last instants with a four-digit year: the range of RFC 3339 `date-time` (the OpenAPI document's time format). */
const FIRST_RENDERED_MS = -62_167_219_200_000; // 0000-01-01T00:00:00.000Z (Date.UTC maps years 0..99 to 19xx)
const LAST_RENDERED_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/**
 * ISO-8601 UTC string of an epoch-ms time, always RFC 3339 (four-digit year);
 * null (and NaN) stays null. A time beyond year 9999 (e.g. a runAt an older
 * version stored past the Date range) renders as 9999-12-31T23:59:59.999Z,
 * one before year 0 as 0000-01-01T00:00:00.000Z, rather than throw or use an
 * expanded year (`+275760-…`) that date-time parsers refuse.
 */
export function iso(ms: number | null | undefined): string | null {
  if (ms === null || ms === undefined || Number.isNaN(ms)) return null;
  // The jobs of one answer mostly share their times (a batch: one createdAt, runAt and updatedAt): one Date for a run of them.
  if (ms === lastMs) return lastIso;
  lastIso = new Date(Math.min(LAST_RENDERED_MS, Math.max(FIRST_RENDERED_MS, clampTime(ms)))).toISOString();
  lastMs = ms;
  return lastIso;
}
let lastMs = NaN;
let lastIso = '';

/** `T` with the epoch-ms fields `K` rendered as ISO-8601 strings (null stays null): the API shape of an engine/history type. */
export type WithIsoTimes<T, K extends keyof T> = Omit<T, K> & { [P in K]: string | null };

/**
 * The API.md job object: the engine's Job with its times as ISO strings
 * (`executionSeq` and `cancelRequested` are additions), and v1.1's
 * `fingerprint` (null unless failed).
 */
export type ApiJob = WithIsoTimes<Job, 'createdAt' | 'runAt' | 'startedAt' | 'finishedAt' | 'updatedAt'> & { fingerprint: string | null };

/**
 * Renders an engine Job (epoch ms) as the API job object. Its `queue` is
 * the bare name its project's clients use (src/core/project-queue.ts): the
 * caller has checked that the job is of the requester's project. A failed
 * job's fingerprint is computed from lastError unless the DLQ copy stored one.
 */
export function toApiJob(j: Job): ApiJob {
  return hasJobKeys(j) ? renderJob(j) : renderBySpread(j);
}

/** {@link toApiJob} for any job (extra keys, another order): a spread copy; the reference the literal fast path must equal (api-job.spec.ts). */
export function renderBySpread(j: Job): ApiJob {
  return {
    ...j,
    queue: bareQueue(j.queue),
    fingerprint: jobFingerprint(j),
    createdAt: iso(j.createdAt),
    runAt: iso(j.runAt),
    startedAt: iso(j.startedAt),
    finishedAt: iso(j.finishedAt),
    updatedAt: iso(j.updatedAt),
  };
}

/**
 * A Job's own keys in the order createdJob (src/jobs/jobs.service.ts) and the
 * stores write them. A job with exactly these keys, in this order, is rendered
 * by {@link renderJob}; any other (more keys, another order) by the spread.
 */
const JOB_KEYS: readonly (keyof Job)[] = [
  'id', 'queue', 'type', 'payload', 'status', 'priority', 'attempts', 'maxAttempts', 'backoff', 'timeoutMs', 'idempotencyKey', 'concurrencyKey',
  'flowId', 'flowRef', 'progress', 'result', 'lastError', 'workerId', 'createdAt', 'runAt', 'startedAt', 'finishedAt', 'updatedAt', 'executionSeq', 'cancelRequested',
];

function hasJobKeys(j: Job): boolean {
  const keys = Object.keys(j);
  if (keys.length !== JOB_KEYS.length) return false;
  for (let i = 0; i < keys.length; i++) if (keys[i] !== JOB_KEYS[i]) return false;
  return true;
}

/**
 * {@link toApiJob} of a job with exactly JOB_KEYS: the same object, key for
 * key and in the same order, as the spread makes. The spread copies the
 * job's numeric time fields and then overwrites them with strings, which
 * makes V8 migrate every copy to a new hidden class (measured: ~4 µs a job,
 * most of a 1,000-job batch answer's rendering); one literal does not.
 */
function renderJob(j: Job): ApiJob {
  return {
    id: j.id,
    queue: bareQueue(j.queue),
    type: j.type,
    payload: j.payload,
    status: j.status,
    priority: j.priority,
    attempts: j.attempts,
    maxAttempts: j.maxAttempts,
    backoff: j.backoff,
    timeoutMs: j.timeoutMs,
    idempotencyKey: j.idempotencyKey,
    concurrencyKey: j.concurrencyKey,
    flowId: j.flowId,
    flowRef: j.flowRef,
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
    fingerprint: jobFingerprint(j),
  };
}

/** A claimed job as the external worker protocol returns it: the job plus its lease. */
export function toApiClaimedJob(j: ClaimedJob): ApiJob & { lockToken: string; leaseExpiresAt: string | null; dependencies?: { ref: string; id: string; status: string }[] } {
  const out = { ...toApiJob(j), lockToken: j.lockToken, leaseExpiresAt: iso(j.leaseExpiresAt) };
  // A flow job's dependencies (API.md v1.2 "Workflows"); absent for other jobs.
  return j.dependencies?.length ? { ...out, dependencies: j.dependencies.map(({ ref, id, status }) => ({ ref, id, status })) } : out;
}
