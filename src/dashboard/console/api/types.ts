/**
 * The contract's objects (API.md), as the console reads them. The generated
 * schema (schema.d.ts) types every path, query and body; where the OpenAPI
 * document does not yet describe a response body, these are the shapes the
 * console relies on. Times are ISO-8601 UTC strings; durations are ms.
 */
export type JobStatus = 'waiting' | 'delayed' | 'active' | 'completed' | 'failed' | 'cancelled';
export const JOB_STATUSES: JobStatus[] = ['waiting', 'delayed', 'active', 'completed', 'failed', 'cancelled'];
export type Role = 'admin' | 'operator' | 'producer' | 'worker' | 'viewer';

export interface Backoff {
  type: 'fixed' | 'linear' | 'exponential';
  delayMs: number;
  maxDelayMs: number;
  jitter: 'none' | 'full' | 'equal';
}

export interface Job {
  id: string;
  queue: string;
  type: string;
  payload: unknown;
  status: JobStatus;
  priority: number;
  attempts: number;
  maxAttempts: number;
  backoff: Backoff;
  timeoutMs: number;
  idempotencyKey: string | null;
  progress: unknown;
  result: unknown;
  lastError: { message?: string; stack?: string; [k: string]: unknown } | string | null;
  workerId: string | null;
  fingerprint?: string | null;
  createdAt: string;
  runAt: string | null;
  startedAt: string | null;
  finishedAt: string | null;
  updatedAt: string;
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export interface JobEvent {
  seq: number;
  at: string;
  event: string;
  from: string | null;
  to: string | null;
  attempt: number | null;
  workerId: string | null;
  reason: string | null;
  error: unknown;
  data: unknown;
}

export interface Execution {
  executionSeq: number;
  attempt: number;
  workerId: string | null;
  startedAt: string;
  finishedAt: string | null;
  outcome: string;
  error: unknown;
  durationMs: number | null;
}

export interface LogLine {
  at: string;
  attempt: number;
  level: string;
  message: string;
}

export type Counts = Record<JobStatus, number>;

export interface Queue {
  name: string;
  paused: boolean;
  maxConcurrency: number | null;
  rateLimit: { max: number; durationMs: number } | null;
  defaults: { maxAttempts: number; backoff: Backoff; timeoutMs: number };
  external: boolean;
  counts: Counts;
}

export interface Stats {
  queues: Record<string, Counts & { paused: boolean; external?: boolean }>;
  totals: Counts;
  workers: { active: number; total?: number };
  throughput: { completedPerMin: number; failedPerMin: number };
  auditLagMs: number;
}

export interface Worker {
  id: string;
  hostname: string;
  pid: number;
  queues: string[];
  concurrency: number;
  active: number;
  startedAt: string;
  lastHeartbeatAt: string;
  status: 'running' | 'draining' | 'dead';
}

export interface Schedule {
  id: string;
  name: string;
  cron: string;
  timezone: string;
  queue: string;
  type: string;
  payload: unknown;
  priority: number;
  maxAttempts: number | null;
  backoff: Backoff | null;
  enabled: boolean;
  nextRunAt: string | null;
  lastRunAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface Session {
  kind: 'user' | 'key' | 'anonymous' | string;
  user: { id: string; username: string } | null;
  keyId: string | null;
  project: string;
  role: Role | null;
  expiresAt: string | null;
}

/** `GET /jobs/dlq/groups` item (API.md v1.1 "Dead-letter groups"). */
export interface DlqGroup {
  fingerprint: string;
  sample: string;
  count: number;
  types: string[];
  queues: string[];
  firstAt: string;
  lastAt: string;
}

/** `GET /dashboard/metrics` step: jobs completed and failed in the step starting `at`. */
export interface MetricsPoint {
  at: string;
  completed: number;
  failed: number;
}

/** One field's complaint in a 400 `validation_failed` envelope. */
export interface FieldError {
  path: string;
  message: string;
}
