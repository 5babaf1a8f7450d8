import { decodeBackoff } from '../core/backoff';
import type { ClaimedJob, Job, Json } from '../core/job';
import { JOB_STATUSES, JobStatus } from '../core/job-status';

/**
 * Job hash field names (short, so small jobs stay in Redis's listpack
 * encoding). The payload arrives merged as `p` (see lua/includes/job.lua).
 *
 *   s status  ty type  p payload  pr priority  sq FIFO sequence  ma maxAttempts
 *   a attempts  x executionSeq  bo backoff  to timeoutMs  ik idempotency key
 *   ca createdAt  ra runAt  sa startedAt  fa finishedAt  ua updatedAt
 *   lt lock token  le lease expiry  w worker id  pg progress  r result
 *   e last error  cr cancel requested
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
  let backoff;
  try {
    backoff = decodeBackoff(h.bo ?? '');
  } catch (e) {
    throw new JobDecodeError((e as Error).message);
  }
  return {
    id,
    queue,
    type: h.ty,
    payload: payload as Record<string, Json>,
    status,
    priority: num(h, 'pr') as number,
    attempts: num(h, 'a') as number,
    maxAttempts: num(h, 'ma') as number,
    backoff,
    timeoutMs: num(h, 'to') as number,
    idempotencyKey: h.ik || null,
    progress: json(h, 'pg'),
    result: json(h, 'r'),
    lastError: h.e || null,
    workerId: h.w || null,
    createdAt: num(h, 'ca') as number,
    runAt: num(h, 'ra') as number,
    startedAt: num(h, 'sa', false),
    finishedAt: num(h, 'fa', false),
    updatedAt: num(h, 'ua') as number,
    executionSeq: num(h, 'x', false) ?? 0,
    cancelRequested: h.cr === '1',
  };
}

/** Decodes one entry of a claimJobs reply: [id, lockToken, leaseExpiresAt, flat fields]. */
export function decodeClaimed(queue: string, entry: [string, string, number, string[]]): ClaimedJob {
  const [id, lockToken, lease, flat] = entry;
  return { ...decodeJob(id, queue, pairsToObject(flat)), lockToken, leaseExpiresAt: Number(lease) };
}
