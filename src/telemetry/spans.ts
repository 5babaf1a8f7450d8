import {
  Attributes,
  Context,
  ProxyTracerProvider,
  ROOT_CONTEXT,
  Span,
  SpanStatusCode,
  Tracer,
  createTraceState,
  trace,
} from '@opentelemetry/api';
import { formatTraceParent, JobTrace, parseTraceParent } from '../core/trace-context';

/**
 * Span helpers on `@opentelemetry/api` only: the SDK (src/telemetry/tracing.ts)
 * is loaded when an OTLP endpoint is configured, or a test registers one.
 * Without a registered provider every helper here answers at once without
 * allocating, so the hot paths (POST /jobs, the worker loop) ask
 * {@link tracingEnabled} before building any span.
 *
 * Span attributes carry ids, names and counts, never payload values.
 */

/** The API's no-op provider, what the global proxy delegates to until an SDK registers. */
const NOOP_PROVIDER = new ProxyTracerProvider().getDelegate();

/** Instrumentation scope of every Sluice span. */
export const TRACER_NAME = 'sluice';

/** `messaging.system` of every Sluice span (OpenTelemetry messaging semantic conventions). */
export const MESSAGING_SYSTEM = 'sluice';

/**
 * True when a tracer provider is registered globally (an SDK is active).
 * Cheap: one global lookup and a comparison, no allocation.
 */
export function tracingEnabled(): boolean {
  const p = trace.getTracerProvider() as ProxyTracerProvider;
  return (typeof p.getDelegate === 'function' ? p.getDelegate() : p) !== NOOP_PROVIDER;
}

/**
 * The Sluice tracer. Asked of the global provider on every call (the SDK
 * caches tracers by name) so that a provider registered later, or replaced
 * in a test, is followed.
 */
export function tracer(): Tracer {
  return trace.getTracer(TRACER_NAME);
}

/**
 * A parent context for a stored or incoming trace context (remote span context).
 * @returns the root context when `carried` is null or not a valid version-00 traceparent.
 */
export function contextOf(carried: JobTrace | null | undefined): Context {
  const tp = carried
    ? parseTraceParent(carried.traceparent, carried.tracestate ?? undefined)
    : null;
  if (!tp) return ROOT_CONTEXT;
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId: tp.traceId,
    spanId: tp.spanId,
    traceFlags: tp.flags,
    isRemote: true,
    ...(tp.tracestate ? { traceState: createTraceState(tp.tracestate) } : {}),
  });
}

/** The trace context that continues from `span`: a job enqueued under it carries this. */
export function traceOf(span: Span): JobTrace {
  const sc = span.spanContext();
  return {
    traceparent: formatTraceParent(sc.traceId, sc.spanId, sc.traceFlags),
    tracestate: sc.traceState?.serialize() || null,
  };
}

/** Common messaging attributes of a span about one job. */
export function jobAttributes(
  id: string,
  queue: string,
  operation: 'send' | 'receive' | 'process',
  operationName: string,
): Attributes {
  return {
    'messaging.system': MESSAGING_SYSTEM,
    'messaging.operation.type': operation,
    'messaging.operation.name': operationName,
    'messaging.destination.name': queue,
    'messaging.message.id': id,
    'sluice.job.id': id,
    'sluice.queue': queue,
  };
}

/**
 * Marks a span failed: status ERROR with `message`, and an exception event
 * with the error's name and message only (no stack, no payload).
 */
export function failSpan(span: Span, message: string, name = 'Error'): void {
  span.recordException({ name, message });
  span.setStatus({ code: SpanStatusCode.ERROR, message });
  span.setAttribute('error.type', name);
}
