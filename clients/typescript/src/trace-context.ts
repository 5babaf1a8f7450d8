import type * as OtelApi from '@opentelemetry/api';

/**
 * W3C Trace Context for the Sluice client: the headers that carry the active
 * OpenTelemetry context to `POST /jobs` and `POST /jobs/batch`, so the jobs
 * (and their `sluice.process` spans on the workers) continue the caller's
 * trace. `@opentelemetry/api` is an optional peer dependency: without it, or
 * without a registered propagator or an active span, no header is sent.
 */

let api: typeof OtelApi | null | undefined;

/** `@opentelemetry/api` when installed (loaded once), else null. */
function otel(): typeof OtelApi | null {
  if (api === undefined) {
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      api = require('@opentelemetry/api') as typeof OtelApi;
    } catch {
      api = null;
    }
  }
  return api;
}

/**
 * The `traceparent` (and `tracestate`) headers of the active context, as the
 * globally registered propagator writes them; `{}` when there is none.
 * Merge them into the headers of an enqueue request.
 */
export function traceHeaders(): { traceparent?: string; tracestate?: string } {
  const o = otel();
  if (!o) return {};
  const carrier: Record<string, string> = {};
  o.propagation.inject(o.context.active(), carrier);
  const out: { traceparent?: string; tracestate?: string } = {};
  if (carrier.traceparent) out.traceparent = carrier.traceparent;
  if (carrier.tracestate) out.tracestate = carrier.tracestate;
  return out;
}
