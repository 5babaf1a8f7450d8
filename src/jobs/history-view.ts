import type { JobEvent, JobExecution, JobLogLine } from '../audit/queries';
import type { Json } from '../core/job';
import { iso } from '../http/api-job';

/** API.md event shape: `at` as ISO. */
export interface ApiJobEvent {
  seq: number;
  at: string | null;
  event: string;
  from: string | null;
  to: string | null;
  attempt: number | null;
  workerId: string | null;
  reason: string | null;
  error: string | null;
  data: Json | null;
}

/** API.md execution shape: `startedAt`/`finishedAt` as ISO (finishedAt null while running). */
export interface ApiJobExecution {
  executionSeq: number;
  attempt: number;
  workerId: string | null;
  startedAt: string | null;
  finishedAt: string | null;
  outcome: string;
  error: string | null;
  durationMs: number | null;
}

/** API.md log line shape: `at` as ISO. */
export interface ApiJobLogLine {
  at: string | null;
  attempt: number;
  level: string;
  message: string;
}

/** Renders an audit event (epoch ms) as the API event. */
export function toApiEvent(e: JobEvent): ApiJobEvent {
  return { seq: e.seq, at: iso(e.at), event: e.event, from: e.from, to: e.to, attempt: e.attempt, workerId: e.workerId, reason: e.reason, error: e.error, data: e.data };
}

/** Renders an execution row (epoch ms) as the API execution. */
export function toApiExecution(x: JobExecution): ApiJobExecution {
  return { ...x, startedAt: iso(x.startedAt), finishedAt: iso(x.finishedAt) };
}

/** Renders a log line (epoch ms) as the API log line. */
export function toApiLog(l: JobLogLine): ApiJobLogLine {
  return { at: iso(l.at), attempt: l.attempt, level: l.level, message: l.message };
}
