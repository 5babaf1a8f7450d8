import type { JobEvent, JobExecution, JobLogLine } from '../history';
import { iso, WithIsoTimes } from '../http/api-job';

/** API.md event shape: `at` as ISO. */
export type ApiJobEvent = WithIsoTimes<JobEvent, 'at'>;

/** API.md execution shape: `startedAt`/`finishedAt` as ISO (finishedAt null while running). */
export type ApiJobExecution = WithIsoTimes<JobExecution, 'startedAt' | 'finishedAt'>;

/** API.md log line shape: `at` as ISO. */
export type ApiJobLogLine = WithIsoTimes<JobLogLine, 'at'>;

/** Renders an audit event (epoch ms) as the API event. */
export function toApiEvent(e: JobEvent): ApiJobEvent {
  return { ...e, at: iso(e.at) };
}

/** Renders an execution row (epoch ms) as the API execution. */
export function toApiExecution(x: JobExecution): ApiJobExecution {
  return { ...x, startedAt: iso(x.startedAt), finishedAt: iso(x.finishedAt) };
}

/** Renders a log line (epoch ms) as the API log line. */
export function toApiLog(l: JobLogLine): ApiJobLogLine {
  return { ...l, at: iso(l.at) };
}
