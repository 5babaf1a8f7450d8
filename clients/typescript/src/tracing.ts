/**
 * W3C trace context for enqueue: when `@opentelemetry/api` (an optional peer
 * dependency) can be loaded, the active context is injected into the request
 * headers (`traceparent`, `tracestate`) by the globally registered propagator.
 * Without the package, or without a registered propagator (the API's default
 * is a no-op), nothing is added.
 */
type OtelApi = {
  context: { active(): unknown };
  propagation: { inject(ctx: unknown, carrier: Record<string, string>): void };
};

let api: OtelApi | null | undefined;

function otel(): OtelApi | null {
  if (api === undefined) {
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      api = require('@opentelemetry/api') as OtelApi;
    } catch {
      api = null;
    }
  }
  return api;
}

/** The headers that carry the active trace context (empty when there is none or no OpenTelemetry). */
export function traceHeaders(): Record<string, string> {
  const o = otel();
  const carrier: Record<string, string> = {};
  if (o) o.propagation.inject(o.context.active(), carrier);
  return carrier;
}
