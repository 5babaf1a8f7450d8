import { Context, Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { JobTrace } from '../core/trace-context';
import { contextOf, failSpan, jobAttributes, traceOf, tracer } from './spans';

/** What the claim and process spans read of a job (a WorkerJob or a ClaimedJob). */
export interface TracedJob {
  id: string;
  type: string;
  attempts: number;
  executionSeq: number;
  traceparent: string | null;
  tracestate: string | null;
}

/** Epoch ms with sub-ms precision, a span start time taken before a claim. */
export function spanClock(): number {
  return performance.timeOrigin + performance.now();
}

/**
 * Records one `sluice.claim` span (kind CLIENT, messaging `receive`) per
 * claimed job, from `startTime` (epoch ms, {@link spanClock}) to now: the
 * child of the job's trace context. A job that carries none gets the claim
 * span's context in memory (`traceparent`/`tracestate` set on the object), so
 * its processing continues the claim's trace; nothing is written back.
 * Call only when {@link tracingEnabled}.
 * @param external claimed through the external worker protocol.
 */
export function recordClaims(
  queue: string,
  jobs: TracedJob[],
  startTime: number,
  workerId: string,
  external: boolean,
): void {
  const t = tracer();
  for (const job of jobs) {
    const carried = job.traceparent
      ? { traceparent: job.traceparent, tracestate: job.tracestate }
      : null;
    const span = t.startSpan(
      'sluice.claim',
      {
        kind: SpanKind.CLIENT,
        startTime,
        attributes: {
          ...jobAttributes(job.id, queue, 'receive', 'claim'),
          'sluice.job.type': job.type,
          'sluice.job.attempt': job.attempts,
          'sluice.job.execution_seq': job.executionSeq,
          'sluice.worker.id': workerId,
          'sluice.claim.external': external,
        },
      },
      contextOf(carried),
    );
    if (!carried) {
      const own = traceOf(span);
      job.traceparent = own.traceparent;
      job.tracestate = own.tracestate;
    }
    span.end();
  }
}

/** A running `sluice.process` span and the context the handler runs in (the span active). */
export interface ProcessTrace {
  span: Span;
  context: Context;
}

/**
 * Starts `sluice.process` (kind CONSUMER) for one attempt of a job: the
 * child of the job's trace context (a new trace when it carries none).
 * Call only when {@link tracingEnabled}.
 */
export function startProcess(
  queue: string,
  job: TracedJob,
  maxAttempts: number,
  workerId: string,
): ProcessTrace {
  const carried: JobTrace | null = job.traceparent
    ? { traceparent: job.traceparent, tracestate: job.tracestate }
    : null;
  const parent = contextOf(carried);
  const span = tracer().startSpan(
    'sluice.process',
    {
      kind: SpanKind.CONSUMER,
      attributes: {
        ...jobAttributes(job.id, queue, 'process', 'process'),
        'sluice.job.type': job.type,
        'sluice.job.attempt': job.attempts,
        'sluice.job.max_attempts': maxAttempts,
        'sluice.job.execution_seq': job.executionSeq,
        'sluice.worker.id': workerId,
      },
    },
    parent,
  );
  return { span, context: trace.setSpan(parent, span) };
}

/**
 * Ends a `sluice.process` span with the attempt's outcome (attribute
 * `sluice.job.outcome`): `completed` → status OK; `failed`, `timeout`,
 * `lease_lost` → status ERROR with `error` (message only); `cancelled`,
 * `released` → status unset.
 * @param willRetry for a failure: the job goes back to delayed for another attempt.
 */
export function endProcess(
  span: Span,
  outcome: string,
  error?: { name: string; message: string },
  willRetry?: boolean,
): void {
  span.setAttribute('sluice.job.outcome', outcome);
  if (outcome === 'completed') span.setStatus({ code: SpanStatusCode.OK });
  else if (error) failSpan(span, error.message, error.name);
  if (willRetry !== undefined) span.setAttribute('sluice.job.will_retry', willRetry);
  span.end();
}
