import { context, Span, SpanKind } from '@opentelemetry/api';
import type { IncomingHttpHeaders } from 'node:http';
import { SluiceError } from '../core/errors';
import { JobTrace, parseTraceParent } from '../core/trace-context';
import { contextOf, failSpan, MESSAGING_SYSTEM, traceOf, tracer, tracingEnabled } from './spans';

/** The trace of one enqueue request: what its jobs carry, and the server's span when it traces. */
export interface EnqueueTrace {
  /** Stored on every job of the request (hash fields tp, ts). */
  carry: JobTrace;
  /** `sluice.enqueue`, when an SDK is registered. */
  span?: Span;
}

/**
 * Begins the trace of a `POST /jobs` or `POST /jobs/batch` request.
 *
 * - With an SDK registered: starts `sluice.enqueue` (kind PRODUCER), the
 *   child of the request's valid `traceparent` (else of the active context,
 *   else a new trace); the jobs carry that span's context, so their
 *   `sluice.process` spans are its children.
 * - Without: the jobs carry the request's `traceparent`/`tracestate` as sent
 *   (validated), so a traced worker or an external worker still continues
 *   the caller's trace.
 *
 * A malformed `traceparent` is ignored (W3C): never an error.
 * @returns null when there is nothing to carry or record (no SDK, no valid
 *   header): then nothing was allocated.
 */
export function beginEnqueue(headers: IncomingHttpHeaders, batch: boolean): EnqueueTrace | null {
  const header = headers.traceparent;
  if (!tracingEnabled()) {
    if (header === undefined) return null;
    const tp = parseTraceParent(header, headers.tracestate);
    return tp ? { carry: { traceparent: tp.traceparent, tracestate: tp.tracestate } } : null;
  }
  const incoming = header === undefined ? null : parseTraceParent(header, headers.tracestate);
  const parent = incoming ? contextOf(incoming) : context.active();
  const span = tracer().startSpan(
    'sluice.enqueue',
    {
      kind: SpanKind.PRODUCER,
      attributes: {
        'messaging.system': MESSAGING_SYSTEM,
        'messaging.operation.type': 'send',
        'messaging.operation.name': batch ? 'enqueue_batch' : 'enqueue',
      },
    },
    parent,
  );
  return { carry: traceOf(span), span };
}

/**
 * Ends the request's `sluice.enqueue` span (no-op without one): the queue
 * and job id (or, for a batch, the job count), or the error's message.
 * @param jobs the jobs as enqueued, in input order; undefined when the request failed.
 */
export function endEnqueue(
  t: EnqueueTrace | null,
  jobs: readonly { id: string; queue: string }[] | undefined,
  err?: unknown,
): void {
  const span = t?.span;
  if (!span) return;
  if (jobs && jobs.length) {
    span.setAttribute('messaging.destination.name', jobs[0].queue);
    span.setAttribute('sluice.queue', jobs[0].queue);
    if (jobs.length === 1) {
      span.setAttribute('messaging.message.id', jobs[0].id);
      span.setAttribute('sluice.job.id', jobs[0].id);
    }
    span.setAttribute('messaging.batch.message_count', jobs.length);
  }
  if (err !== undefined) {
    // An API error's message names fields and limits; anything else (a 500) only by its class, as the envelope does.
    if (err instanceof SluiceError) failSpan(span, err.message, err.code);
    else failSpan(span, 'internal error', err instanceof Error ? err.name : 'Error');
  }
  span.end();
}

/**
 * Awaits an enqueue and ends its `sluice.enqueue` span with the outcome.
 * @returns what `pending` resolves to; rethrows its error.
 */
export async function spanEnqueue<T extends { job: { id: string; queue: string } }>(
  t: EnqueueTrace,
  pending: Promise<T[]>,
): Promise<T[]> {
  try {
    const out = await pending;
    endEnqueue(
      t,
      out.map((o) => o.job),
    );
    return out;
  } catch (e) {
    endEnqueue(t, undefined, e);
    throw e;
  }
}
