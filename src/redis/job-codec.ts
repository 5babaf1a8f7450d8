import { BackoffSpec, DEFAULT_BACKOFF, decodeBackoff } from '../core/backoff';
import type { ClaimedJob, Job, Json, WorkerJob } from '../core/job';
import { clampTime } from '../core/job-options';
import { splitOptions } from '../core/packed-options';
import { JOB_STATUSES, JobStatus } from '../core/job-status';

/**
 * Job hash field names (short, so small jobs stay in Redis's listpack
 * encoding). The payload arrives merged as `p` (see lua/includes/job.lua).
 *
 *   s status  ty type  p payload  pr priority  sq FIFO sequence
 *   o options "maxAttempts;timeoutMs;backoff"  a attempts (default 0)
 *   x executionSeq (default 0)  ik idempotency key  ca createdAt
 *   ra runAt (default createdAt)  sa startedAt  fa finishedAt
 *   ua updatedAt (written only by transitions that set no other timestamp;
 *   updatedAt = the latest of ca, ua, sa, fa)
 *   lt lock token  le lease expiry  w worker id  pg progress  r result
 *   e last error  cr cancel requested
 *   tp W3C traceparent, ts tracestate (only when the job carries a trace context)
 *   ck concurrency key (only when the job has one; API.md v1.1 "Flow control per key")
 */
export class JobDecodeError extends Error {}

function num(h: Record<string, string>, k: string, required = true): number | null {
  const v = h[k];
  if (v === undefined || v === '') {
    if (required) throw new JobDecodeError(`field ${k} missing`);
    return null;
  }
  const n = Number(v);
  if (!Number.isFinite(n)) throw new JobDecodeError(`field ${k} is not a number: ${JSON.stringify(v.slice(0, 40))}`);
  return n;
}

/** {@link num} for a time: brought into the Date range (a runAt stored out of it by an older version stays readable). */
function time(h: Record<string, string>, k: string, required = true): number | null {
  const n = num(h, k, required);
  return n === null ? null : clampTime(n);
}

function json(h: Record<string, string>, k: string): Json | null {
  const v = h[k];
  if (v === undefined || v === '') return null;
  try {
    return JSON.parse(v) as Json;
  } catch {
    throw new JobDecodeError(`field ${k} is not JSON`);
  }
}

/** Flat [k, v, k, v, ...] array to an object. */
export function pairsToObject(flat: string[]): Record<string, string> {
  const h: Record<string, string> = {};
  for (let i = 0; i < flat.length; i += 2) h[flat[i]] = flat[i + 1];
  return h;
}

/**
 * Decodes a job hash into the Job shape.
 * @throws JobDecodeError when a field is missing or malformed.
 */
export function decodeJob(id: string, queue: string, h: Record<string, string>): Job {
  const status = h.s as JobStatus;
  if (!JOB_STATUSES.includes(status)) throw new JobDecodeError(`unknown status ${JSON.stringify(h.s)}`);
  if (!h.ty) throw new JobDecodeError('field ty (type) missing');
  const payload = json(h, 'p');
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) {
    throw new JobDecodeError('payload is not a JSON object');
  }
  const opts = splitOptions(h.o);
  if (!opts) throw new JobDecodeError('field o (options) missing or malformed');
  const backoff = cachedBackoff(opts.backoff);
  const { maxAttempts, timeoutMs } = opts;
  if (!Number.isInteger(maxAttempts) || !Number.isInteger(timeoutMs)) throw new JobDecodeError('field o (options) malformed');
  const createdAt = time(h, 'ca') as number;
  const startedAt = time(h, 'sa', false);
  const finishedAt = time(h, 'fa', false);
  return {
    id,
    queue,
    type: h.ty,
    payload: payload as Record<string, Json>,
    status,
    priority: num(h, 'pr') as number,
    attempts: num(h, 'a', false) ?? 0,
    maxAttempts,
    backoff,
    timeoutMs,
    idempotencyKey: h.ik || null,
    concurrencyKey: h.ck || null,
    flowId: h.fl || null,
    flowRef: h.rf || null,
    progress: json(h, 'pg'),
    result: json(h, 'r'),
    lastError: h.e || null,
    workerId: h.w || null,
    createdAt,
    runAt: time(h, 'ra', false) ?? createdAt,
    startedAt,
    finishedAt,
    updatedAt: Math.max(createdAt, time(h, 'ua', false) ?? 0, startedAt ?? 0, finishedAt ?? 0),
    executionSeq: num(h, 'x', false) ?? 0,
    cancelRequested: h.cr === '1',
  };
}

/**
 * One entry of a claimJobs reply (see lua/claimJobs-8.lua): a full entry has
 * the job's flat hash 11th; a lean one its traceparent and tracestate 11th
 * and 12th when it carries them.
 */
export type ClaimEntry = [string, string, number, string, string, number, string, string, string, number, (string[] | string)?, string?, string?, string?];

/** A flow job's dependencies as its hash stores them (field dp), with its flow id (field fl). */
export interface FlowDeps {
  flowId: string;
  deps: { ref: string; id: string; queue: string }[];
}

/**
 * The dependencies a claimJobs entry carries (a flow job: lean entries 13th
 * and 14th, full ones in the hash), or null. A malformed list reads as none
 * (at most 1,000 entries, each {ref, id, queue} strings).
 */
export function flowDepsOf(entry: ClaimEntry): FlowDeps | null {
  let dp: string | undefined;
  let fl: string | undefined;
  if (Array.isArray(entry[10])) {
    const h = pairsToObject(entry[10]);
    dp = h.dp;
    fl = h.fl;
  } else {
    dp = entry[12];
    fl = entry[13];
  }
  if (!dp || !fl) return null;
  try {
    const v: unknown = JSON.parse(dp);
    if (!Array.isArray(v) || v.length > 1000) return null;
    const deps = v.filter((d): d is { ref: string; id: string; queue: string } => !!d && typeof d.ref === 'string' && typeof d.id === 'string' && typeof d.queue === 'string');
    return { flowId: fl, deps: deps.map(({ ref, id, queue }) => ({ ref, id, queue })) };
  } catch {
    return null;
  }
}

/** Decodes a full claimJobs entry (11 elements) into a ClaimedJob. */
export function decodeClaimed(queue: string, entry: ClaimEntry): ClaimedJob {
  const [id, lockToken, lease, , , , , , , , flat] = entry;
  const h = pairsToObject(Array.isArray(flat) ? flat : []);
  return { ...decodeJob(id, queue, h), lockToken, leaseExpiresAt: clampTime(Number(lease)), traceparent: h.tp || null, tracestate: h.ts || null, dependencies: [] };
}

const backoffCache = new Map<string, BackoffSpec>();
/** decodeBackoff with a cache: a queue's jobs share a handful of encodings. */
function cachedBackoff(s: string): BackoffSpec {
  let b = backoffCache.get(s);
  if (!b) {
    try {
      b = decodeBackoff(s);
    } catch (e) {
      throw new JobDecodeError((e as Error).message);
    }
    if (backoffCache.size < 1000) backoffCache.set(s, b);
  }
  return b;
}

/**
 * Decodes a lean claimJobs entry: only what a worker needs to run the job.
 * @throws JobDecodeError on a missing type, a non-object payload or bad options.
 */
export function decodeWorkerJob(entry: ClaimEntry): WorkerJob {
  const [id, lockToken, lease, type, payloadJson, attempts, ma, bo, to, x, tp, ts] = entry;
  if (!type) throw new JobDecodeError('field ty (type) missing');
  let payload: unknown;
  try {
    payload = JSON.parse(payloadJson);
  } catch {
    throw new JobDecodeError('payload is not JSON');
  }
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) throw new JobDecodeError('payload is not a JSON object');
  const maxAttempts = Number(ma);
  const timeoutMs = Number(to);
  if (!Number.isInteger(maxAttempts) || !Number.isInteger(timeoutMs) || timeoutMs <= 0) throw new JobDecodeError('maxAttempts or timeoutMs malformed');
  return {
    id,
    type,
    payload: payload as Record<string, Json>,
    attempts: Number(attempts),
    maxAttempts,
    backoff: cachedBackoff(bo),
    timeoutMs,
    executionSeq: Number(x),
    lockToken,
    leaseExpiresAt: Number(lease),
    traceparent: typeof tp === 'string' && tp !== '' ? tp : null,
    tracestate: ts || null,
    dependencies: [],
  };
}

/**
 * Best-effort decode of a corrupted hash, for reads only: unknown fields get
 * neutral values, a non-JSON payload becomes `{}` and the status defaults to
 * `failed` (where claim puts such jobs). Never throws.
 */
export function decodeJobLeniently(id: string, queue: string, h: Record<string, string>): Job {
  const n = (k: string): number | null => (h[k] !== undefined && Number.isFinite(Number(h[k])) ? clampTime(Number(h[k])) : null);
  const parse = (k: string): Json | null => {
    try {
      return h[k] ? (JSON.parse(h[k]) as Json) : null;
    } catch {
      return null;
    }
  };
  const payload = parse('p');
  const opts = splitOptions(h.o);
  let backoff: BackoffSpec = DEFAULT_BACKOFF;
  try {
    backoff = decodeBackoff(opts?.backoff ?? '');
  } catch {
    /* keep the default */
  }
  const createdAt = n('ca') ?? 0;
  return {
    id,
    queue,
    type: h.ty || 'unknown',
    payload: payload && typeof payload === 'object' && !Array.isArray(payload) ? (payload as Record<string, Json>) : {},
    status: JOB_STATUSES.includes(h.s as JobStatus) ? (h.s as JobStatus) : 'failed',
    priority: n('pr') ?? 0,
    attempts: n('a') ?? 0,
    maxAttempts: (opts?.maxAttempts || 1),
    backoff,
    timeoutMs: (opts?.timeoutMs || 600_000),
    idempotencyKey: h.ik || null,
    concurrencyKey: h.ck || null,
    flowId: h.fl || null,
    flowRef: h.rf || null,
    progress: parse('pg'),
    result: parse('r'),
    lastError: h.e || null,
    workerId: h.w || null,
    createdAt,
    runAt: n('ra') ?? createdAt,
    startedAt: n('sa'),
    finishedAt: n('fa'),
    updatedAt: Math.max(createdAt, n('ua') ?? 0, n('sa') ?? 0, n('fa') ?? 0),
    executionSeq: n('x') ?? 0,
    cancelRequested: h.cr === '1',
  };
}
