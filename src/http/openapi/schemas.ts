import type { SchemaObject } from '@nestjs/swagger/dist/interfaces/open-api-spec.interface';
import { ORG_ROLES, ROLES } from '../../core/access';
import { JOB_STATUSES } from '../../core/job-status';
import { RATE_LIMIT_MAX } from '../../core/api-key';

/**
 * Response schemas of the OpenAPI document (components.schemas), written as
 * schema objects rather than DTO classes: response bodies are built by the
 * services, never validated on the way out, and a class would only carry
 * decorators. The e2e suite validates every response it receives against
 * these (test/support/openapi-validator.ts), so they cannot drift from the code.
 *
 * Conventions:
 * - integers are `type: integer`; durations are integer ms (`…Ms`);
 * - times are ISO-8601 UTC strings (`format: date-time`), `nullable` where the API answers null;
 * - free JSON (`payload`, `result`, `progress`, event `data`) is the empty schema `{}`:
 *   any JSON value including null (openapi-typescript makes it `unknown`);
 * - objects are open (no `additionalProperties: false`): API.md evolves by adding
 *   fields, never renaming, so a client must accept fields it does not know.
 *   The e2e validator closes them, so the server cannot send an undocumented field.
 */

const int = (description?: string, extra: SchemaObject = {}): SchemaObject => ({ type: 'integer', ...(description ? { description } : {}), ...extra });
const time = (description?: string, nullable = false): SchemaObject => ({ type: 'string', format: 'date-time', ...(nullable ? { nullable: true } : {}), ...(description ? { description } : {}) });
const str = (description?: string, nullable = false): SchemaObject => ({ type: 'string', ...(nullable ? { nullable: true } : {}), ...(description ? { description } : {}) });
const ref = (name: string): SchemaObject => ({ $ref: `#/components/schemas/${name}` }) as SchemaObject;
/** An object whose listed properties are all present (null where the schema says nullable), and the `optional` ones that may be absent. */
const obj = (properties: Record<string, SchemaObject>, extra: SchemaObject = {}, optional: Record<string, SchemaObject> = {}): SchemaObject => ({
  type: 'object',
  required: Object.keys(properties),
  properties: { ...properties, ...optional },
  ...extra,
});
/** Any JSON value, null included. */
const anyJson = (description: string): SchemaObject => ({ description });

/** A status or null (OpenAPI 3.0: a `$ref` cannot carry `nullable`, so the enum is inline, null included). */
const nullableStatus = (description: string): SchemaObject => ({ type: 'string', enum: [...JOB_STATUSES, null], nullable: true, description });

/** What a member with hidePayloads reads in place of a payload (src/core/hidden-payloads.ts). */
const HIDDEN_VALUE: SchemaObject = { type: 'string', enum: ['[hidden]'], description: 'hidden from this member (hidePayloads)' };

const BACKOFF: SchemaObject = obj(
  {
    type: { type: 'string', enum: ['fixed', 'linear', 'exponential'] },
    delayMs: int('base delay, ms', { minimum: 0 }),
    maxDelayMs: int('cap before jitter, ms', { minimum: 0 }),
    jitter: { type: 'string', enum: ['none', 'full', 'equal'] },
  },
  { description: 'Retry backoff as resolved (defaults filled in).' },
);

const EXAMPLE_ID = '0193a6f4-1c2b-7d3e-8f40-5a6b7c8d9e0f';

/**
 * The statuses a queue's `counts` has (API.md "Queues": waiting, delayed, active,
 * completed, failed, cancelled): every status but `blocked`, which src/history/queue-counts.ts
 * does not count yet (it will come from the queue's `blocked` set, docs/workflows.md).
 */
export const COUNTED_STATUSES = JOB_STATUSES.filter((s) => s !== 'blocked');

export const COUNTS_PROPERTIES: Record<string, SchemaObject> = Object.fromEntries(COUNTED_STATUSES.map((s) => [s, int(`jobs in status ${s}`, { minimum: 0 })]));

const JOB_PROPERTIES: Record<string, SchemaObject> = {
  id: str('UUIDv7, made by the server'),
  queue: str(),
  type: str(),
  payload: {
    oneOf: [{ type: 'object', additionalProperties: {} }, HIDDEN_VALUE],
    description: 'the JSON object the job was enqueued with; the string "[hidden]" for a member with hidePayloads (API.md v1.3)',
  },
  status: ref('JobStatus'),
  priority: int('−100..100; higher runs first', { minimum: -100, maximum: 100 }),
  attempts: int('executions started (a released attempt is refunded)', { minimum: 0 }),
  maxAttempts: int('total executions allowed, the first included', { minimum: 1 }),
  backoff: ref('Backoff'),
  timeoutMs: int('ms an attempt may run', { minimum: 1 }),
  idempotencyKey: str(undefined, true),
  concurrencyKey: str("the job's concurrency key (API.md v1.1 flow control per key); null when it has none", true),
  flowId: str('the flow (POST /flows) the job belongs to; null outside flows (addition to API.md)', true),
  flowRef: str('its ref in that flow; null outside flows (addition to API.md)', true),
  progress: anyJson('a number 0..100 or a small JSON object set by the handler; null until set'),
  result: anyJson("the handler's result (any JSON); null until completed"),
  lastError: str('message of the last failure', true),
  workerId: str('the worker holding or last holding the job', true),
  createdAt: time(),
  runAt: time('when the job is (or was) due'),
  startedAt: time('start of the newest attempt', true),
  finishedAt: time('when it reached a terminal status', true),
  updatedAt: time(),
  executionSeq: int('executions started, refunded ones included (addition to API.md)', { minimum: 0 }),
  cancelRequested: { type: 'boolean', description: 'an active job has a pending cancel request (addition to API.md)' },
  fingerprint: str('its dead-letter group (API.md v1.1): 16 hex characters of its error fingerprint; null unless failed', true),
};

const JOB_EXAMPLE = {
  id: EXAMPLE_ID,
  queue: 'emails',
  type: 'send_email',
  payload: { to: 'ada@example.com' },
  status: 'waiting',
  priority: 0,
  attempts: 0,
  maxAttempts: 3,
  backoff: { type: 'exponential', delayMs: 2000, maxDelayMs: 3600000, jitter: 'equal' },
  timeoutMs: 600000,
  idempotencyKey: null,
  concurrencyKey: 'customer-42',
  flowId: null,
  flowRef: null,
  progress: null,
  result: null,
  lastError: null,
  workerId: null,
  createdAt: '2026-12-01T10:00:00.000Z',
  runAt: '2026-12-01T10:00:00.000Z',
  startedAt: null,
  finishedAt: null,
  updatedAt: '2026-12-01T10:00:00.000Z',
  executionSeq: 0,
  cancelRequested: false,
  fingerprint: null,
};

const KEY_PROPERTIES: Record<string, SchemaObject> = {
  id: str(),
  name: str(),
  role: { type: 'string', enum: [...ROLES] },
  project: str(),
  root: { type: 'boolean', description: 'admin of every project (the bootstrap key)' },
  createdAt: time(),
  expiresAt: time('null = never', true),
  rateLimit: obj(
    {
      perSec: int('requests per second (refill rate), across every api replica', { minimum: 1, maximum: RATE_LIMIT_MAX }),
      burst: int('requests at once (bucket size)', { minimum: 1, maximum: RATE_LIMIT_MAX }),
    },
    { nullable: true, description: "this key's own token bucket; null = KEY_RATE_LIMIT_PER_SEC / KEY_RATE_LIMIT_BURST (addition to API.md)" },
  ),
};

/** A per-key rate limit: a sliding window (API.md v1.1 `keyRateLimit`, v1.2 a key's override `rateLimit`). */
const KEY_RATE_LIMIT: SchemaObject = obj({ max: int('starts per window per key', { minimum: 1, maximum: 10000 }), durationMs: int('window, ms', { minimum: 1 }) });
/** A key's override or the limits in force for it (API.md v1.2): each null when none. */
const keyLimits = (description: string, nullable = false): SchemaObject =>
  obj(
    {
      concurrency: int('active jobs of this key at most; null = none', { nullable: true, minimum: 1 }),
      rateLimit: { ...KEY_RATE_LIMIT, nullable: true, description: 'starts of this key per sliding window; null = none' },
    },
    { description, ...(nullable ? { nullable: true } : {}) },
  );
const QUEUE_KEY_EXAMPLE = {
  key: 'customer-42',
  waiting: 120,
  active: 2,
  overrides: { concurrency: 5, rateLimit: null },
  limits: { concurrency: 5, rateLimit: { max: 100, durationMs: 60000 } },
};

const QUEUE_EXAMPLE = {
  name: 'emails',
  paused: false,
  maxConcurrency: 20,
  rateLimit: { max: 100, durationMs: 60000 },
  defaults: { maxAttempts: 3, backoff: JOB_EXAMPLE.backoff, timeoutMs: 600000 },
  external: false,
  keyConcurrency: 2,
  keyRateLimit: { max: 100, durationMs: 60000 },
  fairness: 'round_robin',
  agingMs: null,
  counts: { waiting: 12, delayed: 3, active: 5, completed: 1042, failed: 2, cancelled: 0 },
};

/**
 * The error envelope's codes: API.md's table plus `lease_lost`,
 * `unsupported_media_type`, `internal` (500) and the HTTP layer's
 * `request_timeout` (408), `uri_too_long` (414) and `headers_too_large` (431).
 * Every code src/http/error-envelope.ts can answer must be here (document.spec.ts).
 */
export const ERROR_CODES = [
  'validation_failed',
  'unauthorized',
  'forbidden',
  'not_found',
  'request_timeout',
  'conflict',
  'lease_lost',
  'payload_too_large',
  'uri_too_long',
  'unsupported_media_type',
  'rate_limited',
  'headers_too_large',
  'unavailable',
  'internal',
] as const;

/** components.schemas: name → schema. */
export const RESPONSE_SCHEMAS: Record<string, SchemaObject> = {
  Error: obj(
    {
      error: obj({
        code: { type: 'string', enum: [...ERROR_CODES], description: 'machine-readable; see API.md "Errors"' },
        message: str('human-readable; no stack traces'),
        details: { type: 'array', items: ref('ErrorDetail'), description: 'one entry per field for validation_failed (else usually empty)' },
        requestId: str('the X-Request-Id of the request'),
      }),
    },
    {
      description: 'The one envelope of every non-2xx response (API.md "Errors").',
      example: { error: { code: 'validation_failed', message: 'invalid request: priority', details: [{ path: 'priority', message: 'must be an integer -100..100 or "high", "normal", "low"' }], requestId: 'b7f3c1d2-4e5f-4a6b-8c7d-9e0f1a2b3c4d' } },
    },
  ),
  ErrorDetail: obj({ path: str('dotted field path, e.g. `jobs.3.type`; empty for the whole body'), message: str() }),
  JobStatus: { type: 'string', enum: [...JOB_STATUSES], description: 'API.md "Job object"; `blocked` (v1.2 workflows): a flow job whose dependencies have not all completed, not claimable' },
  Backoff: BACKOFF,
  Job: obj(JOB_PROPERTIES, { description: 'API.md "Job object"; times ISO-8601 UTC.', example: JOB_EXAMPLE }),
  ClaimedJob: obj(
    {
      ...JOB_PROPERTIES,
      // A claim is never answered to a member who hides payloads (403): a claimed job always has its payload.
      payload: { type: 'object', additionalProperties: {}, description: 'the JSON object the job was enqueued with' },
      lockToken: str('pass it to heartbeat, complete and fail'),
      leaseExpiresAt: time('lease end (Redis clock); renew with a heartbeat', true),
      traceparent: str(
        "W3C traceparent to parent the worker's processing span on: the context the job was enqueued in (the server's enqueue span when it traces, else the producer's `traceparent` header), or, when the server traces and the job carries none, its claim span; null otherwise (addition to API.md)",
        true,
      ),
      tracestate: str('W3C tracestate that goes with `traceparent`; null when none (addition to API.md)', true),
    },
    { description: 'A job held under a lease by the caller of claim.' },
    {
      dependencies: {
        type: 'array',
        maxItems: 1000,
        description: 'a flow job\'s dependencies and their status when it was claimed (API.md v1.2 "Workflows"); absent for a job outside flows',
        items: obj({ ref: str('its ref in the flow'), id: str('job id'), status: ref('JobStatus') }),
      },
    },
  ),
  JobPage: obj(
    { items: { type: 'array', items: ref('Job') }, nextCursor: str('pass as `cursor` for the next page; null on the last page', true) },
    { description: 'One page of a keyset-paginated list, newest first.', example: { items: [JOB_EXAMPLE], nextCursor: null } },
  ),
  FlowCreated: obj(
    {
      flowId: str('UUIDv7, made by the server'),
      jobs: {
        type: 'array',
        description: 'in request order: each job as POST /jobs answers it, with its ref and the ids it depends on',
        items: obj({
          ...JOB_PROPERTIES,
          ref: str('its ref in the request'),
          dependsOn: { type: 'array', items: str(), description: 'ids of the jobs it waits for' },
        }),
      },
    },
    { description: 'API.md v1.2 "Workflows": the new flow; its roots are waiting (or delayed), the rest blocked.' },
  ),
  Flow: obj(
    {
      flowId: str(),
      status: {
        type: 'string',
        enum: ['running', 'completed', 'failed', 'cancelled'],
        description:
          'completed: every job completed; failed: a job failed and none is unfinished; cancelled: none failed, one or more cancelled and none unfinished; else running (docs/api.md "Workflows")',
      },
      counts: obj(Object.fromEntries(JOB_STATUSES.map((st) => [st, int(`its jobs in status ${st}`, { minimum: 0 })])), { description: 'every status, 0 included' }),
      jobs: {
        type: 'array',
        description: 'in request order',
        items: obj({
          ref: str('its ref in the request; null only for a job recorded without one', true),
          id: str(),
          status: nullableStatus('null: the job is neither in Redis nor in the history (past retention)'),
          dependsOn: { type: 'array', items: str(), description: 'ids of the jobs it waits for' },
        }),
      },
    },
    { description: 'A flow and the status of each of its jobs (API.md v1.2 "Workflows").' },
  ),
  JobDependencies: obj(
    {
      items: {
        type: 'array',
        description: 'its dependencies in the order it named them; empty for a job without any (or one Redis has pruned)',
        items: obj({
          ref: str(),
          id: str(),
          status: nullableStatus('null: the dependency is neither in Redis nor in the history (past retention)'),
          result: anyJson("the dependency's result (any JSON); null until completed"),
          lastError: str('message of its last failure', true),
        }),
      },
    },
    { description: "A flow job's dependencies with their results (API.md v1.2 \"Workflows\")." },
  ),
  JobBatch: obj({ jobs: { type: 'array', items: ref('Job'), description: 'in input order' } }, { example: { jobs: [JOB_EXAMPLE] } }),
  MinimalJob: obj(
    { id: str('the job id'), status: ref('JobStatus') },
    { description: 'A job as `Prefer: return=minimal` answers it (API.md v1.3).', example: { id: JOB_EXAMPLE.id, status: 'waiting' } },
  ),
  MinimalJobBatch: obj(
    { jobs: { type: 'array', items: ref('MinimalJob'), description: 'in input order' } },
    { example: { jobs: [{ id: JOB_EXAMPLE.id, status: 'waiting' }] } },
  ),
  ClaimedJobs: obj({ jobs: { type: 'array', items: ref('ClaimedJob'), description: 'empty when nothing came within waitMs' } }),
  JobEvent: obj(
    {
      seq: int('order of the event within the job', { minimum: 0 }),
      at: time(),
      event: {
        type: 'string',
        enum: ['enqueued', 'promoted', 'claimed', 'heartbeat_lost', 'progress', 'completed', 'retry_scheduled', 'failed', 'stalled', 'released', 'cancelled', 'cancel_requested', 'retried_from_dlq', 'purged', 'debounced', 'unblocked', 'blocked'],
        description:
          '`purged` (addition to API.md): removed from the DLQ by DELETE /jobs/dlq; `debounced` (v1.2): an enqueue with the job\'s debounce key updated it; ' +
          "`unblocked` (v1.2 workflows): a flow job's dependencies let it run (blocked to waiting, or delayed until its runAt); " +
          '`blocked` (addition to API.md, workflows): a DLQ retry of the dependency that cancelled a flow job brought it back (cancelled to blocked)',
      },
      from: nullableStatus('status before; null when none'),
      to: nullableStatus('status after; null when unchanged'),
      attempt: int(undefined, { nullable: true }),
      workerId: str(undefined, true),
      reason: str('e.g. lease_expired for a stalled event', true),
      error: str(undefined, true),
      data: anyJson('event-specific JSON (e.g. progress); null when none'),
    },
    { description: 'One entry of the audit trail.' },
  ),
  JobEvents: obj({ items: { type: 'array', items: ref('JobEvent'), description: 'oldest first' } }),
  JobExecution: obj(
    {
      executionSeq: int('1-based run number', { minimum: 1 }),
      attempt: int(undefined, { minimum: 0 }),
      workerId: str(undefined, true),
      startedAt: time(),
      finishedAt: time('null while running', true),
      outcome: { type: 'string', enum: ['completed', 'failed', 'timeout', 'stalled', 'released', 'cancelled', 'running'] },
      error: str(undefined, true),
      durationMs: int('run time, ms; null while running', { nullable: true, minimum: 0 }),
    },
    { description: 'One execution (run) of a job.' },
  ),
  JobExecutions: obj({ items: { type: 'array', items: ref('JobExecution'), description: 'in run order' } }),
  JobLogLine: obj({ at: time(), attempt: int(undefined, { minimum: 0 }), level: str('info, warn or error'), message: str() }),
  JobLogs: obj({ items: { type: 'array', items: ref('JobLogLine'), description: 'oldest first' } }),
  Retried: obj({ retried: int('jobs moved back to waiting', { minimum: 0 }) }, { example: { retried: 12 } }),
  Purged: obj({ purged: int('jobs removed from the dead-letter queue', { minimum: 0 }) }, { example: { purged: 12 } }),
  LeaseRenewed: obj(
    { leaseExpiresAt: time('new lease end (Redis clock)', true), cancelRequested: { type: 'boolean', description: 'a client asked to cancel: stop and complete or fail' } },
    { example: { leaseExpiresAt: '2026-12-01T10:00:30.000Z', cancelRequested: false } },
  ),
  QueueCounts: obj(COUNTS_PROPERTIES, { description: 'Exact job counts per status.' }),
  Queue: obj(
    {
      name: str(),
      paused: { type: 'boolean' },
      maxConcurrency: int('cap on active jobs across all workers; null = none', { nullable: true, minimum: 1 }),
      rateLimit: obj({ max: int(undefined, { minimum: 1 }), durationMs: int('window, ms', { minimum: 1 }) }, { nullable: true, description: 'cap on job starts per window; null = none' }),
      defaults: obj(
        { maxAttempts: int(undefined, { minimum: 1 }), backoff: ref('Backoff'), timeoutMs: int('ms', { minimum: 1 }) },
        { description: "effective defaults for the queue's jobs: its own, else the process defaults" },
      ),
      external: { type: 'boolean', description: 'served only through the external worker protocol' },
      keyConcurrency: int('at most this many active jobs per concurrency key (API.md v1.1 flow control per key); null = none', { nullable: true, minimum: 1 }),
      keyRateLimit: { ...KEY_RATE_LIMIT, nullable: true, description: 'at most max starts per key in any sliding window of durationMs; null = none' },
      fairness: {
        type: 'string',
        enum: ['fifo', 'round_robin'],
        description: 'the effective value: as set, else round_robin once the queue has had keyed jobs, else fifo',
      },
      agingMs: int("a waiting job's effective priority rises by 1 per agingMs (up to 100); null = none", { nullable: true, minimum: 1000 }),
      counts: ref('QueueCounts'),
    },
    { example: QUEUE_EXAMPLE },
    {
      summaryIncludesPayload: { type: 'boolean', description: "failure summaries by a model may send this queue's payload values (API.md v1.3); always sent" },
      payloadSearch: {
        description: "payload search index of the queue (v1.1 console): false when off, else the index's state; absent when PostgreSQL did not answer",
        oneOf: [{ type: 'boolean', enum: [false] }, { type: 'string', enum: ['building', 'ready', 'failed'] }],
      },
    },
  ),
  QueueKey: obj(
    {
      key: str('the concurrency key'),
      waiting: int('ready jobs of the key (delayed ones not counted)', { minimum: 0 }),
      active: int('jobs of the key held by workers', { minimum: 0 }),
      overrides: keyLimits("the key's override (PUT /queues/:name/keys/:key); null when it has none", true),
      limits: keyLimits("the limits in force for the key: each override field where set, else the queue's keyConcurrency / keyRateLimit"),
    },
    { description: 'One concurrency key of a queue (API.md v1.1/v1.2 flow control per key).', example: QUEUE_KEY_EXAMPLE },
  ),
  QueueKeys: obj({ items: { type: 'array', items: ref('QueueKey'), description: 'busiest first (waiting + active), then keys with only an override' } }, { example: { items: [QUEUE_KEY_EXAMPLE] } }),
  Schedule: obj(
    {
      id: str(),
      name: str(),
      cron: str(),
      timezone: str('IANA time zone'),
      queue: str(),
      type: str(),
      payload: { oneOf: [{ type: 'object', additionalProperties: {} }, HIDDEN_VALUE], description: 'the string "[hidden]" for a member with hidePayloads' },
      priority: int(undefined, { minimum: -100, maximum: 100 }),
      maxAttempts: int("null = the queue's default", { nullable: true, minimum: 1 }),
      backoff: { ...BACKOFF, nullable: true, description: "null = the queue's default" },
      timeoutMs: int("ms; null = the queue's default", { nullable: true, minimum: 1 }),
      concurrencyKey: str('the concurrency key of the jobs it enqueues (API.md v1.1 flow control per key); null = none', true),
      enabled: { type: 'boolean' },
      nextRunAt: time('next slot; null while disabled', true),
      lastRunAt: time(undefined, true),
      lastJobId: str('job of the newest run', true),
      lastSlotAt: time('slot of the newest run', true),
      createdAt: time(),
      updatedAt: time(),
    },
    {
      example: {
        id: EXAMPLE_ID,
        name: 'nightly-report',
        cron: '30 2 * * *',
        timezone: 'Europe/Berlin',
        queue: 'reports',
        type: 'build_report',
        payload: {},
        priority: 0,
        maxAttempts: null,
        backoff: null,
        timeoutMs: null,
        concurrencyKey: null,
        enabled: true,
        nextRunAt: '2026-12-02T01:30:00.000Z',
        lastRunAt: null,
        lastJobId: null,
        lastSlotAt: null,
        createdAt: '2026-12-01T10:00:00.000Z',
        updatedAt: '2026-12-01T10:00:00.000Z',
      },
    },
  ),
  SchedulePreview: obj({ runs: { type: 'array', items: time() } }, { example: { runs: ['2026-12-02T01:30:00.000Z', '2026-12-03T01:30:00.000Z'] } }),
  Worker: obj({
    id: str(),
    hostname: str(),
    pid: int(),
    queues: { type: 'array', items: str() },
    concurrency: int(undefined, { minimum: 0 }),
    active: int('jobs running now', { minimum: 0 }),
    startedAt: time(undefined, true),
    lastHeartbeatAt: time(undefined, true),
    status: { type: 'string', enum: ['running', 'draining', 'dead'] },
    kind: { type: 'string', enum: ['process', 'external'], description: '`process`: an in-process worker (registry entry); `external`: a worker id seen calling the external worker protocol (v1.1 console)' },
    lastClaimAt: time("an external worker's last claim; null for in-process workers", true),
    jobs: { type: 'array', items: str(), description: 'ids of the active jobs it holds (≤ 100; GET /workers)' },
  }),
  DlqGroup: obj(
    {
      fingerprint: str('16 hex characters'),
      sample: str("the newest failure's error message", true),
      count: int('dead-letter jobs in the group', { minimum: 1 }),
      types: { type: 'array', items: str(), description: 'distinct job types (≤ 20, sorted)' },
      queues: { type: 'array', items: str(), description: 'distinct queues (≤ 20, sorted)' },
      firstAt: time('oldest failure'),
      lastAt: time('newest failure'),
      summary: ref('DlqGroupSummary'),
    },
    {
      description: 'One dead-letter group: the failures sharing an error fingerprint (API.md v1.1), with its failure summary (v1.3).',
      example: {
        fingerprint: '3f0c9a1e5b7d2c44', sample: 'order 41 not found', count: 12, types: ['charge'], queues: ['orders'], firstAt: '2026-12-01T09:00:00.000Z', lastAt: '2026-12-01T10:00:00.000Z',
        summary: {
          kind: 'rules',
          text: '12 jobs of type charge in queue orders failed with "order 41 not found" since 09:00 UTC, 3 in the last hour. All 12 failed on worker w-3 after their 3rd attempt: check worker w-3 (drain or replace it) before retrying the group.',
          count: 12, firstAt: '2026-12-01T09:00:00.000Z', lastAt: '2026-12-01T10:00:00.000Z',
          hourly: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9, 3],
          types: ['charge'], queues: ['orders'], workers: ['w-3'], attempts: [3], payloadKeys: ['amount', 'orderId'],
          exampleJobIds: [EXAMPLE_ID], newPayloadKeys: [], sampleSize: 12,
        },
      },
    },
  ),
  DlqGroupSummary: obj(
    {
      kind: { type: 'string', enum: ['rules', 'model'], description: '`rules`: made from the history without a model (always available); `model`: written by SUMMARY_MODEL_URL\'s model' },
      text: str("one or two sentences an operator can act on; the model's diagnosis when kind is model (plain text, never HTML)"),
      count: int('dead-letter jobs in the group now', { minimum: 1 }),
      firstAt: time('oldest failure'),
      lastAt: time('newest failure'),
      hourly: { type: 'array', items: int(undefined, { minimum: 0 }), minItems: 24, maxItems: 24, description: 'failures per hour over the last 24 h, oldest first; the last entry is the hour ending at the read' },
      types: { type: 'array', items: str(), description: 'distinct job types (≤ 20, sorted)' },
      queues: { type: 'array', items: str(), description: 'distinct queues (≤ 20, sorted)' },
      workers: { type: 'array', items: str(), description: "workers of the sampled jobs' last executions, most failures first (≤ 10)" },
      attempts: { type: 'array', items: int(undefined, { minimum: 0 }), description: 'distinct attempt counts of the sampled jobs, ascending' },
      payloadKeys: { type: 'array', items: str(), description: 'top-level payload keys every sampled payload had (the newest ten read; sorted)' },
      exampleJobIds: { type: 'array', items: str(), description: 'the newest failures (≤ 5)' },
      newPayloadKeys: { type: 'array', items: str(), description: 'payload keys every failure had and none of the jobs of the same queue and type completed before the first failure had' },
      sampleSize: int('the newest jobs read one by one (≤ 50) for workers, attempts and payload keys', { minimum: 0 }),
    },
    { description: 'A failure summary (API.md v1.3 "Failure summaries", docs/failure-summaries.md).' },
    {
      nextStep: str('kind model: the next step the model proposes (plain text)'),
      model: str('kind model: SUMMARY_MODEL that wrote it'),
      generatedAt: time('kind model: when the model wrote it'),
      summarizedCount: int('kind model: the group\'s size when it was written (made again once the group has doubled)', { minimum: 1 }),
      rulesText: str('kind model: the rules summary\'s sentences, beside the model\'s'),
    },
  ),
  SummaryRequest: obj(
    {
      fingerprint: str('16 hex characters'),
      queued: { type: 'boolean', description: 'true: the model summarizes the group again at the scheduler\'s next pass; false: no model is configured' },
      summary: ref('DlqGroupSummary'),
    },
    { description: 'Answer of POST /jobs/dlq/groups/:fingerprint/summary: the summary as it is now.' },
  ),
  DlqGroups: obj({ items: { type: 'array', items: ref('DlqGroup'), description: 'largest group first (ties by fingerprint)' } }),
  DashboardMetrics: obj(
    {
      stepMs: int('bucket width, ms', { minimum: 1000, maximum: 86400000 }),
      series: {
        type: 'array',
        description: 'oldest first, zero-filled',
        items: obj({ at: time("the bucket's start"), completed: int(undefined, { minimum: 0 }), failed: int('into the dead-letter queue', { minimum: 0 }) }),
      },
    },
    { example: { stepMs: 60000, series: [{ at: '2026-12-01T10:00:00.000Z', completed: 42, failed: 1 }] } },
  ),
  DashboardStats: obj({
    queues: {
      type: 'object',
      description: 'queue name → counts',
      additionalProperties: obj({ ...COUNTS_PROPERTIES, paused: { type: 'boolean' }, external: { type: 'boolean' } }),
    },
    totals: ref('QueueCounts'),
    workers: obj({ active: int('alive (running or draining)', { minimum: 0 }), total: int(undefined, { minimum: 0 }) }),
    throughput: obj({ completedPerMin: int(undefined, { minimum: 0 }), failedPerMin: int(undefined, { minimum: 0 }) }),
    auditLagMs: int('age of the oldest audit event not yet in PostgreSQL, ms (0 = caught up)', { minimum: 0 }),
  }),
  Project: obj(
    { name: str('the queue-name rule'), org: str('the organization that holds it (API.md v1.3)'), createdAt: time() },
    { description: 'A project (tenant).', example: { name: 'acme', org: 'default', createdAt: '2026-12-01T00:00:00.000Z' } },
  ),
  Health: obj({ status: { type: 'string', enum: ['ok'] } }, { example: { status: 'ok' } }),
  Readiness: {
    type: 'object',
    required: ['status', 'checks'],
    description: 'Ready (`ok`), or ready without PostgreSQL (`degraded`: the failed checks at the top level, e.g. `postgres: "down"`, and in `details`).',
    properties: {
      status: { type: 'string', enum: ['ok', 'degraded'] },
      checks: {
        type: 'object',
        required: ['redis'],
        properties: { redis: ref('CheckState'), postgres: ref('CheckState'), migrations: ref('CheckState') },
        description: '`postgres` and `migrations` are absent when the process needs no PostgreSQL',
      },
      postgres: ref('CheckState'),
      migrations: ref('CheckState'),
      details: { type: 'array', items: ref('ErrorDetail') },
    },
    example: { status: 'degraded', postgres: 'down', checks: { redis: 'ok', postgres: 'down', migrations: 'unknown' }, details: [{ path: 'postgres', message: 'connect ECONNREFUSED' }] },
  },
  CheckState: { type: 'string', enum: ['ok', 'down', 'pending', 'unknown'] },
};

/** An API key, without its secret: the list view adds `lastUsedAt`; creation adds the secret; revocation `revoked`. */
RESPONSE_SCHEMAS.KeyView = obj({ ...KEY_PROPERTIES, lastUsedAt: time('≤ ~5 s stale; null = never used', true) }, { description: 'An API key, without its secret.' });
RESPONSE_SCHEMAS.CreatedKey = obj({ ...KEY_PROPERTIES, secret: str('`sk_…`: shown in this answer only') }, { description: 'A new API key with its secret.' });
RESPONSE_SCHEMAS.RevokedKey = obj({ ...KEY_PROPERTIES, revoked: { type: 'boolean', enum: [true] } }, { description: 'A revoked API key.' });

const USER_REF_EXAMPLE = { id: EXAMPLE_ID, username: 'ana@example.com' };
const userRef = (description: string, nullable = false): SchemaObject =>
  obj({ id: str('UUIDv7'), username: str() }, { description, ...(nullable ? { nullable: true } : {}) });
const USER_PROPERTIES: Record<string, SchemaObject> = {
  id: str('UUIDv7, made by the server'),
  username: str('unique whatever its case'),
  project: str('the project this view is in (a user may have a role in several)'),
  role: { type: 'string', enum: [...ROLES], description: 'role in this project' },
  createdAt: time(),
  disabledAt: time('when the user was disabled (cannot log in, sessions ended); null = enabled', true),
};
const USER_EXAMPLE = { id: EXAMPLE_ID, username: 'ana@example.com', project: 'default', role: 'operator', createdAt: '2026-12-01T10:00:00.000Z', disabledAt: null };

/** Dashboard users (src/auth/user-store.ts UserView): never a password or its hash. */
RESPONSE_SCHEMAS.User = obj(USER_PROPERTIES, { description: 'A dashboard user, within one project: never a password or its hash.', example: USER_EXAMPLE });
RESPONSE_SCHEMAS.DeletedUser = obj(
  { ...USER_PROPERTIES, deleted: { type: 'boolean', enum: [true] } },
  { description: 'A user removed from the project (and deleted when it had no other project).', example: { ...USER_EXAMPLE, deleted: true } },
);

/** `POST /auth/login` (src/auth/login.service.ts LoginAnswer), `POST /auth/logout`, `GET /auth/session` (src/auth/login.controller.ts SessionAnswer). */
RESPONSE_SCHEMAS.LoginSession = obj(
  {
    user: userRef('the signed-in user'),
    project: str('the project the session acts in'),
    role: { type: 'string', enum: [...ROLES], description: "the user's role in that project" },
    expiresAt: time('when the session ends unless activity refreshes it'),
  },
  { description: 'A new dashboard session; its token is only in the `Set-Cookie` header.', example: { user: USER_REF_EXAMPLE, project: 'default', role: 'operator', expiresAt: '2026-12-01T18:00:00.000Z' } },
);
const PROJECT_ACCESS = obj({ name: str(), org: str(), role: { type: 'string', enum: [...ROLES] } }, { description: 'A project the request may act in, with its role there.' });
RESPONSE_SCHEMAS.LoggedOut = obj({ loggedOut: { type: 'boolean', enum: [true] } }, { example: { loggedOut: true } });
RESPONSE_SCHEMAS.Session = obj(
  {
    kind: { type: 'string', enum: ['user', 'key', 'anonymous'], description: '`user`: the session cookie; `key`: an API key; `anonymous`: AUTH is off' },
    user: userRef('the signed-in user; null unless kind is `user`', true),
    keyId: str('the API key; null unless kind is `key`', true),
    project: str('the project the request acts in'),
    role: { type: 'string', enum: [...ROLES, null], nullable: true, description: 'the role the request acts with' },
    expiresAt: time('when the session ends unless activity refreshes it; null for keys and AUTH=off', true),
    org: str('the organization of the project the request acts in'),
    hidePayloads: { type: 'boolean', description: 'payloads, results and log messages read as "[hidden]" for this request' },
    projects: { type: 'array', items: PROJECT_ACCESS, description: 'every project the user may switch to (`POST /auth/project`) with its role; a key: its project' },
    orgs: {
      type: 'array',
      items: obj({ name: str(), orgRole: { type: 'string', enum: [...ORG_ROLES] } }),
      description: "the signed-in user's organizations with its role in each; [] for keys and AUTH=off",
    },
  },
  {
    description: 'Who a request acts as.',
    example: {
      kind: 'user', user: USER_REF_EXAMPLE, keyId: null, project: 'default', role: 'operator', expiresAt: '2026-12-01T18:00:00.000Z', org: 'default', hidePayloads: false,
      projects: [{ name: 'default', org: 'default', role: 'operator' }],
      orgs: [{ name: 'default', orgRole: 'member' }],
    },
  },
);

/** Organizations and members (API.md v1.3; src/auth/org-store.ts, src/auth/member-store.ts). */
RESPONSE_SCHEMAS.Org = obj(
  { name: str('the queue-name rule'), createdAt: time() },
  { description: 'An organization: holds projects and members.', example: { name: 'acme', createdAt: '2026-12-05T10:00:00.000Z' } },
  { orgRole: { type: 'string', enum: [...ORG_ROLES], description: "the signed-in user's role in it (a user's own list only)" } },
);
const MEMBER_PROPERTIES: Record<string, SchemaObject> = {
  id: str('the user (UUIDv7)'),
  username: str('unique whatever its case'),
  org: str(),
  orgRole: { type: 'string', enum: [...ORG_ROLES] },
  projects: { type: 'object', additionalProperties: { type: 'string', enum: [...ROLES] }, description: 'project → role given there (owner and admin are admin of every project whatever this says)' },
  hidePayloads: { type: 'boolean', description: 'payloads, results and log messages read as "[hidden]" for this member' },
  invited: { type: 'boolean', description: 'true while the user has not set a password (invitation pending or expired)' },
  createdAt: time('when the user joined the organization'),
};
const MEMBER_EXAMPLE = { id: EXAMPLE_ID, username: 'ana@example.com', org: 'acme', orgRole: 'member', projects: { shop: 'operator' }, hidePayloads: false, invited: false, createdAt: '2026-12-05T10:00:00.000Z' };
RESPONSE_SCHEMAS.Member = obj(MEMBER_PROPERTIES, { description: 'A member of an organization.', example: MEMBER_EXAMPLE });
RESPONSE_SCHEMAS.CreatedMember = obj(
  MEMBER_PROPERTIES,
  { description: 'A new member; a new user comes with its invitation (shown in this answer only).', example: { ...MEMBER_EXAMPLE, invited: true, inviteToken: 'inv_…', inviteExpiresAt: '2026-12-12T10:00:00.000Z' } },
  {
    inviteToken: str('`inv_…`: present when the user is new; shown in this answer only; valid 7 days, once (`POST /auth/accept-invite`)'),
    inviteExpiresAt: time('when the invitation ends'),
  },
);
RESPONSE_SCHEMAS.RemovedMember = obj({ ...MEMBER_PROPERTIES, removed: { type: 'boolean', enum: [true] } }, { description: 'A member as it was before its removal.' });
RESPONSE_SCHEMAS.InviteAccepted = obj(
  { user: userRef('the user whose password is now set'), org: str('the organization that invited it') },
  { description: 'The password is set: the user may log in (`POST /auth/login`).', example: { user: USER_REF_EXAMPLE, org: 'acme' } },
);

/** `GET /audit-log` (src/oplog/oplog-queries.ts ApiOplogEntry). */
RESPONSE_SCHEMAS.AuditLogEntry = obj(
  {
    id: str('UUIDv7 made when the answer was sent'),
    at: time('when the request was answered'),
    project: str(),
    actor: str('`key:<id>`, `user:<id>`, `anonymous` (AUTH=off), `public` (a route that needs no credentials, e.g. login) or `none` (credentials refused)'),
    actorKind: { type: 'string', enum: ['key', 'user', 'anonymous', 'public', 'none'] },
    action: str('what was asked, e.g. `queue.pause`, `user.create`, `auth.login`'),
    target: str('the queue, job, schedule, key or user acted on; null when the call names none', true),
    method: str('HTTP method'),
    path: str('the route pattern, e.g. `/queues/:name/pause` (never the raw URL or its query)'),
    status: int('HTTP status of the answer (refusals are recorded too)', { minimum: 100, maximum: 599 }),
    address: str('the client address (TCP peer)', true),
    requestId: str('the X-Request-Id of the request', true),
  },
  { description: 'One operator action: who, what, target, when, from where, answered how. Never a body, payload or secret.' },
);
RESPONSE_SCHEMAS.AuditLogPage = obj(
  { items: { type: 'array', items: ref('AuditLogEntry'), description: 'newest first' }, nextCursor: str('pass as `cursor` for the next page; null on the last page', true) },
  {
    description: 'One page of the operator audit log, newest first.',
    example: {
      items: [
        {
          id: EXAMPLE_ID,
          at: '2026-12-01T10:00:00.000Z',
          project: 'default',
          actor: `key:${EXAMPLE_ID}`,
          actorKind: 'key',
          action: 'queue.pause',
          target: 'emails',
          method: 'POST',
          path: '/queues/:name/pause',
          status: 200,
          address: '10.0.0.7',
          requestId: 'b7f3c1d2-4e5f-4a6b-8c7d-9e0f1a2b3c4d',
        },
      ],
      nextCursor: null,
    },
  },
);
