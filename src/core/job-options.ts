import { BackoffSpec, DEFAULT_BACKOFF, MAX_BACKOFF_DELAY_MS, backoffProblem } from './backoff';
import { ValidationError } from './errors';
import type { Json } from './job';

/**
 * Limits and patterns of API.md `POST /jobs` and `PUT /queues/:name`; where
 * API.md gives no maximum, ours (docs/configuration.md, "Limits"). The Lua scripts clamp the
 * times they compute to the same bounds (lua/includes/clamp.lua).
 */
export const LIMITS = Object.freeze({
  typePattern: /^[A-Za-z0-9_.:-]{1,128}$/,
  queuePattern: /^[a-z0-9][a-z0-9_-]{0,63}$/,
  minPriority: -100,
  maxPriority: 100,
  maxDelayMs: 31_536_000_000,
  /** Backoff delayMs and maxDelayMs, ms (one year, like delayMs). */
  maxBackoffDelayMs: MAX_BACKOFF_DELAY_MS,
  /** The latest instant a JavaScript Date can hold (an ISO `runAt` of the API reaches year 9999 at most); the Lua scripts format times as C longs. */
  maxRunAtMs: 8_640_000_000_000_000,
  /** A queue's `maxConcurrency`: active jobs across all workers. */
  maxConcurrency: 100_000,
  /** A queue's `rateLimit.max`: job starts per window. */
  maxRateLimitMax: 1_000_000,
  /** A queue's `rateLimit.durationMs`, ms (one day; CASES.md C29 lets a window > 2^31 ms be refused). */
  maxRateLimitDurationMs: 86_400_000,
  minAttempts: 1,
  maxAttempts: 100,
  maxTimeoutMs: 86_400_000,
  maxIdempotencyKeyLength: 255,
  /** A job's `concurrencyKey` and a `debounce.key`, characters (API.md v1.1/v1.2 "Flow control per key"). */
  maxFlowKeyLength: 128,
  /** `debounce.windowMs`, ms (API.md v1.2). */
  minDebounceWindowMs: 100,
  maxDebounceWindowMs: 86_400_000,
  /** `debounce.maxWaitMs` upper bound, ms (one week, API.md v1.2); its lower bound is the windowMs sent. */
  maxDebounceMaxWaitMs: 604_800_000,
  /** A queue's `keyConcurrency` and a key's override `concurrency`: active jobs per concurrency key. */
  maxKeyConcurrency: 100_000,
  /**
   * A queue's `keyRateLimit.max` and a key's override `rateLimit.max`: starts per
   * window per key. The window slides: each key keeps the start times of its
   * window as a list, so `max` bounds that list (10,000: *ours*).
   */
  maxKeyRateLimitMax: 10_000,
  /** A queue's `agingMs`, ms (1 s .. 1 day). */
  minAgingMs: 1000,
  maxAgingMs: 86_400_000,
  /** `GET /queues/:name/keys?limit=`: 1..1000, default 50. */
  maxKeysListLimit: 1000,
  defaultKeysListLimit: 50,
  defaultTimeoutMs: 600_000,
  defaultQueue: 'default',
});

/**
 * An epoch-ms time brought into the JavaScript Date range (±8.64e15 ms), so
 * rendering it never throws: a runAt stored out of range by an older version
 * reads as the last instant a Date holds. NaN stays NaN (a decode error).
 */
export function clampTime(ms: number): number {
  return ms > LIMITS.maxRunAtMs ? LIMITS.maxRunAtMs : ms < -LIMITS.maxRunAtMs ? -LIMITS.maxRunAtMs : ms;
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export const NAMED_PRIORITIES: Readonly<Record<string, number>> = { high: 10, normal: 0, low: -10 };

/** What a client may pass to enqueue one job (the `POST /jobs` body). */
export interface EnqueueInput {
  type: string;
  payload?: Record<string, Json>;
  queue?: string;
  priority?: number | 'high' | 'normal' | 'low';
  delayMs?: number;
  /** Absolute run time, epoch ms. Mutually exclusive with delayMs. */
  runAt?: number;
  maxAttempts?: number;
  backoff?: BackoffSpec;
  timeoutMs?: number;
  idempotencyKey?: string;
  /** The job's concurrency key (API.md v1.1 "Flow control per key"): 1..128 characters. */
  concurrencyKey?: string;
  /** API.md v1.2 debounce; exclusive with idempotencyKey. */
  debounce?: DebounceSpec;
}

/** API.md v1.2 "Flow control per key: debounce": key 1..128 chars, windowMs 100..86,400,000, maxWaitMs windowMs..604,800,000 (absent: no bound). */
export interface DebounceSpec {
  key: string;
  windowMs: number;
  maxWaitMs?: number;
}

/**
 * An enqueue request after validation. Fields left undefined take the
 * queue's defaults (read inside the enqueue script) and then the process
 * defaults, so a queue reconfigured a moment ago applies at once.
 */
export interface NormalizedEnqueue {
  queue: string;
  type: string;
  /** The payload serialized once, as stored. */
  payloadJson: string;
  priority: number;
  delayMs?: number;
  runAt?: number;
  maxAttempts?: number;
  backoff?: BackoffSpec;
  timeoutMs?: number;
  idempotencyKey?: string;
  /** The job's concurrency key (API.md v1.1 "Flow control per key"), 1..128 chars. */
  concurrencyKey?: string;
  /** Debounce (API.md v1.2): one job per key while it waits; windowMs 100..86,400,000, maxWaitMs windowMs..604,800,000. */
  debounce?: { key: string; windowMs: number; maxWaitMs?: number };
  /** Set for a job of a flow (API.md v1.2 "Workflows"): it is created `blocked`, with this id. */
  flow?: FlowPlacement;
}

/** Where a job sits in a flow (docs/workflows.md): set by the flows service, never by a client. */
export interface FlowPlacement {
  flowId: string;
  /** The job's id, chosen before the enqueue (the flow's record names it). */
  jobId: string;
  /** Its ref in the POST /flows request (1..64 chars). */
  ref: string;
  onDependencyFailure: 'cancel' | 'run';
  /** Its dependencies: refs, job ids and queues (project-qualified). */
  dependsOn: { ref: string; id: string; queue: string }[];
}

const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v);

/**
 * Why `v` cannot be a flow-control key (a job's `concurrencyKey`, a
 * `debounce.key`, a key of `/queues/:name/keys/:key`), or null when it can:
 * a string of 1..{@link LIMITS.maxFlowKeyLength} characters without NUL or
 * a lone surrogate. The HTTP layer refuses NUL and lone surrogates in every
 * body, query and path already; checked here too for callers that are not
 * HTTP (schedules), since Redis keeps keys as UTF-8, where two keys that
 * differ only in a lone surrogate would become one.
 */
export function flowKeyProblem(v: unknown): string | null {
  if (typeof v !== 'string' || v.length < 1 || v.length > LIMITS.maxFlowKeyLength) return `must be a string of 1..${LIMITS.maxFlowKeyLength} characters`;
  if (v.includes('\u0000')) return 'must not contain NUL characters (U+0000)';
  if (LONE_SURROGATE.test(v)) return 'must be well-formed Unicode (no lone surrogates)';
  return null;
}

/**
 * Validates a `debounce` object (API.md v1.2), reporting each bad field
 * through `bad` (`debounce.key`, `debounce.windowMs`, `debounce.maxWaitMs`).
 * @returns the spec with only its known fields, or undefined when it is bad.
 */
function checkDebounce(v: unknown, bad: (path: string, message: string) => void): DebounceSpec | undefined {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) {
    bad('debounce', 'must be an object {key, windowMs, maxWaitMs?}');
    return undefined;
  }
  const d = v as Record<string, unknown>;
  let ok = true;
  const keyProblem = flowKeyProblem(d.key);
  if (keyProblem) {
    bad('debounce.key', keyProblem);
    ok = false;
  }
  const windowOk = isInt(d.windowMs) && d.windowMs >= LIMITS.minDebounceWindowMs && d.windowMs <= LIMITS.maxDebounceWindowMs;
  if (!windowOk) {
    bad('debounce.windowMs', `must be an integer ${LIMITS.minDebounceWindowMs}..${LIMITS.maxDebounceWindowMs}`);
    ok = false;
  }
  if (d.maxWaitMs !== undefined) {
    const min = windowOk ? (d.windowMs as number) : LIMITS.minDebounceWindowMs;
    if (!(isInt(d.maxWaitMs) && d.maxWaitMs >= min && d.maxWaitMs <= LIMITS.maxDebounceMaxWaitMs)) {
      bad('debounce.maxWaitMs', `must be an integer ${windowOk ? 'windowMs' : LIMITS.minDebounceWindowMs}..${LIMITS.maxDebounceMaxWaitMs}`);
      ok = false;
    }
  }
  if (!ok) return undefined;
  return d.maxWaitMs === undefined ? { key: d.key as string, windowMs: d.windowMs as number } : { key: d.key as string, windowMs: d.windowMs as number, maxWaitMs: d.maxWaitMs as number };
}

/**
 * Validates and normalizes one enqueue input.
 * @param maxPayloadBytes serialized payload limit (MAX_PAYLOAD_BYTES).
 * @throws ValidationError listing every bad field as `{path, message}`.
 * @throws PayloadTooLargeError when the payload exceeds the limit.
 */
export function normalizeEnqueue(input: EnqueueInput, maxPayloadBytes: number, pathPrefix = ''): NormalizedEnqueue {
  const details: { path: string; message: string }[] = [];
  const bad = (path: string, message: string) => details.push({ path: pathPrefix + path, message });
  const queue = input.queue ?? LIMITS.defaultQueue;
  if (typeof queue !== 'string' || !LIMITS.queuePattern.test(queue)) bad('queue', 'must match ^[a-z0-9][a-z0-9_-]{0,63}$');
  if (typeof input.type !== 'string' || !LIMITS.typePattern.test(input.type)) bad('type', 'must match ^[A-Za-z0-9_.:-]{1,128}$');
  const payload = input.payload ?? {};
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) bad('payload', 'must be a JSON object');
  let priority = 0;
  if (input.priority !== undefined) {
    // hasOwn, not `in`: 'toString' & co. must not pass as named priorities.
    if (typeof input.priority === 'string' && Object.hasOwn(NAMED_PRIORITIES, input.priority)) priority = NAMED_PRIORITIES[input.priority];
    else if (isInt(input.priority) && input.priority >= LIMITS.minPriority && input.priority <= LIMITS.maxPriority) priority = input.priority;
    else bad('priority', 'must be an integer -100..100 or "high", "normal", "low"');
  }
  if (input.delayMs !== undefined && input.runAt !== undefined) bad('delayMs', 'delayMs and runAt are mutually exclusive');
  if (input.delayMs !== undefined && !(isInt(input.delayMs) && input.delayMs >= 0 && input.delayMs <= LIMITS.maxDelayMs)) {
    bad('delayMs', `must be an integer 0..${LIMITS.maxDelayMs}`);
  }
  if (input.runAt !== undefined && !(isInt(input.runAt) && input.runAt >= 0 && input.runAt <= LIMITS.maxRunAtMs)) bad('runAt', 'must be a valid time');
  if (input.maxAttempts !== undefined && !(isInt(input.maxAttempts) && input.maxAttempts >= LIMITS.minAttempts && input.maxAttempts <= LIMITS.maxAttempts)) {
    bad('maxAttempts', 'must be an integer 1..100');
  }
  let backoff: BackoffSpec | undefined;
  if (input.backoff !== undefined) {
    backoff = { ...DEFAULT_BACKOFF, ...input.backoff };
    const problem = typeof input.backoff === 'object' && input.backoff !== null ? backoffProblem(backoff) : 'must be an object';
    // "delayMs must be ..." names its field: the 400 says backoff.delayMs.
    const field = problem && /^(type|delayMs|maxDelayMs|jitter) /.exec(problem)?.[1];
    if (problem) bad(field ? `backoff.${field}` : 'backoff', problem);
  }
  if (input.timeoutMs !== undefined && !(isInt(input.timeoutMs) && input.timeoutMs >= 1 && input.timeoutMs <= LIMITS.maxTimeoutMs)) {
    bad('timeoutMs', 'must be an integer 1..86400000');
  }
  if (input.idempotencyKey !== undefined && !(typeof input.idempotencyKey === 'string' && input.idempotencyKey.length >= 1 && input.idempotencyKey.length <= LIMITS.maxIdempotencyKeyLength)) {
    bad('idempotencyKey', 'must be a string of 1..255 characters');
  } else if (input.idempotencyKey !== undefined && LONE_SURROGATE.test(input.idempotencyKey)) {
    // Redis stores keys as UTF-8, where every lone surrogate becomes U+FFFD:
    // two different keys would collide.
    bad('idempotencyKey', 'must be well-formed Unicode (no lone surrogates)');
  }
  if (input.concurrencyKey !== undefined) {
    const problem = flowKeyProblem(input.concurrencyKey);
    if (problem) bad('concurrencyKey', problem);
  }
  let debounce: DebounceSpec | undefined;
  if (input.debounce !== undefined) {
    debounce = checkDebounce(input.debounce, bad);
    // One job per debounce key would be a second identity beside the idempotency key's: the two never combine.
    if (input.idempotencyKey !== undefined) bad('debounce', 'debounce and idempotencyKey are mutually exclusive');
  }
  if (details.length) throw new ValidationError('invalid job', details);
  const payloadJson = JSON.stringify(payload);
  if (Buffer.byteLength(payloadJson) > maxPayloadBytes) throw new PayloadTooLargeError(maxPayloadBytes);
  return {
    queue,
    type: input.type,
    payloadJson,
    priority,
    delayMs: input.delayMs,
    runAt: input.runAt,
    maxAttempts: input.maxAttempts,
    backoff,
    timeoutMs: input.timeoutMs,
    idempotencyKey: input.idempotencyKey,
    concurrencyKey: input.concurrencyKey,
    debounce,
  };
}

/** Serialized payload over MAX_PAYLOAD_BYTES (HTTP 413 `payload_too_large`). */
export class PayloadTooLargeError extends ValidationError {
  override readonly code = 'payload_too_large';
  constructor(readonly limitBytes: number) {
    super(`payload larger than ${limitBytes} bytes`);
  }
}
