import Ajv, { type ValidateFunction } from 'ajv';
import { isISO8601, length } from 'class-validator';
import { flowKeyProblem, LIMITS } from '../../core/job-options';
import { isMaxWait, isPriority } from './enqueue-job.dto';

/**
 * The enqueue DTOs' rules (./enqueue-job.dto.ts) as one compiled JSON-schema
 * validator, for the hot path: `POST /jobs` and `POST /jobs/batch` (up to
 * 1,000 jobs a request). class-validator walks each job's metadata and
 * allocates an error object per property even when nothing fails; ajv
 * compiles the rules into one function that only answers yes or no.
 *
 * It only answers "valid": a body it refuses goes through the class-validator
 * path (./enqueue-body.pipe.ts), which names every problem exactly as before.
 * So this validator must never accept what the DTO refuses (it may refuse
 * more: that only costs the slow path). The standard rules are JSON Schema
 * (types, integer bounds, enums, patterns, required fields, unknown fields
 * refused, array sizes); every custom rule calls the very function its
 * decorator calls (priority, flow keys, `debounce.maxWaitMs`, `runAt` as
 * strict ISO-8601, the idempotency key's length in class-validator's count).
 * `null` is refused everywhere, as the DTO's null rule (src/http/null-fields.ts)
 * does for these fields, none of which is documented nullable.
 * src/jobs/dto/enqueue-schema.spec.ts compares the two on the bounds and on
 * generated bodies.
 */

const int = (minimum: number, maximum: number) => ({ type: 'integer', minimum, maximum });
const flowKey = { type: 'string', sluiceFlowKey: true };

/** One job of `POST /jobs` (EnqueueJobDto). */
export const ENQUEUE_JOB_SCHEMA = {
  type: 'object',
  required: ['type'],
  additionalProperties: false,
  properties: {
    type: { type: 'string', pattern: LIMITS.typePattern.source },
    payload: { type: 'object' },
    queue: { type: 'string', pattern: LIMITS.queuePattern.source },
    priority: { sluicePriority: true },
    delayMs: int(0, LIMITS.maxDelayMs),
    runAt: { type: 'string', sluiceIso8601: true },
    maxAttempts: int(LIMITS.minAttempts, LIMITS.maxAttempts),
    backoff: {
      type: 'object',
      additionalProperties: false,
      properties: {
        type: { enum: ['fixed', 'linear', 'exponential'] },
        delayMs: int(0, LIMITS.maxBackoffDelayMs),
        maxDelayMs: int(0, LIMITS.maxBackoffDelayMs),
        jitter: { enum: ['none', 'full', 'equal'] },
      },
    },
    timeoutMs: int(1, LIMITS.maxTimeoutMs),
    idempotencyKey: { type: 'string', sluiceIdempotencyKey: true },
    concurrencyKey: flowKey,
    debounce: {
      type: 'object',
      required: ['key', 'windowMs'],
      additionalProperties: false,
      sluiceMaxWait: true,
      properties: {
        key: flowKey,
        windowMs: int(LIMITS.minDebounceWindowMs, LIMITS.maxDebounceWindowMs),
        maxWaitMs: { type: 'integer' },
      },
    },
  },
} as const;

/** The `POST /jobs/batch` body (EnqueueBatchDto): 1..1000 jobs. */
export const ENQUEUE_BATCH_SCHEMA = {
  type: 'object',
  required: ['jobs'],
  additionalProperties: false,
  properties: { jobs: { type: 'array', minItems: 1, maxItems: 1000, items: ENQUEUE_JOB_SCHEMA } },
} as const;

function compile(): { job: ValidateFunction; batch: ValidateFunction } {
  // unicodeRegExp off: the patterns run as the DTO's RegExp objects do (no `u` flag).
  const ajv = new Ajv({ allErrors: false, unicodeRegExp: false, strict: true, messages: false });
  const keyword = (name: string, validate: (data: unknown, parent: unknown) => boolean) =>
    ajv.addKeyword({ keyword: name, schemaType: 'boolean', errors: false, validate: (_s: boolean, data: unknown, _p: unknown, ctx?: { parentData: unknown }) => validate(data, ctx?.parentData) });
  keyword('sluicePriority', (v) => isPriority(v));
  keyword('sluiceFlowKey', (v) => flowKeyProblem(v) === null);
  keyword('sluiceIso8601', (v) => isISO8601(v, { strict: true }));
  keyword('sluiceIdempotencyKey', (v) => length(v, 1, LIMITS.maxIdempotencyKeyLength));
  keyword('sluiceMaxWait', (d) => {
    if (typeof d !== 'object' || d === null) return false; // `type: object` refuses it too
    const o = d as { maxWaitMs?: unknown; windowMs?: unknown };
    return o.maxWaitMs === undefined || isMaxWait(o.maxWaitMs, o.windowMs);
  });
  return { job: ajv.compile(ENQUEUE_JOB_SCHEMA), batch: ajv.compile(ENQUEUE_BATCH_SCHEMA) };
}

let compiled: ReturnType<typeof compile> | null = null;
const validators = () => (compiled ??= compile());

/** Compiles the validators now (~0.1 s): the pipes call it as Nest builds them at boot, so no request pays for it. */
export function compileEnqueueValidators(): void {
  validators();
}

/** Whether `body` passes every EnqueueJobDto rule (false: take the class-validator path for the details). */
export function isValidJobBody(body: unknown): boolean {
  return validators().job(body) === true;
}

/** Whether `body` passes every EnqueueBatchDto rule, each job's too. */
export function isValidBatchBody(body: unknown): boolean {
  return validators().batch(body) === true;
}
