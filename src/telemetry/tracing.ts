/**
 * The OpenTelemetry SDK, started only when an OTLP endpoint is configured:
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as is) or
 * `OTEL_EXPORTER_OTLP_ENDPOINT` (`/v1/traces` appended), as the OTLP
 * exporter reads them. Otherwise nothing is loaded and `@opentelemetry/api`
 * stays a no-op (src/telemetry/spans.ts tracingEnabled() is false).
 *
 * The SDK reads the rest of the standard variables itself: `OTEL_EXPORTER_OTLP_HEADERS`,
 * `OTEL_TRACES_SAMPLER`/`_ARG`, `OTEL_BSP_*` (batching). `service.name`
 * is `OTEL_SERVICE_NAME`, default `sluice`.
 */

/** A started SDK. */
export interface Tracing {
  /** Where spans go (scheme, host and path; never credentials), for the start-up log line. */
  readonly endpoint: string;
  readonly serviceName: string;
  /**
   * Flushes the spans still batched and stops the exporter; at most `timeoutMs` (ms).
   * Never throws: an unreachable collector loses those spans.
   */
  shutdown(timeoutMs?: number): Promise<void>;
}

/** Default `service.name` of the resource. */
export const DEFAULT_SERVICE_NAME = 'sluice';

/**
 * The endpoint tracing exports to, or null when tracing is off (no endpoint,
 * or `OTEL_SDK_DISABLED=true`).
 */
export function tracingEndpoint(env: NodeJS.ProcessEnv = process.env): string | null {
  if ((env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase() === 'true') return null;
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  if (traces) return traces;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  return base ? `${base.replace(/\/+$/, '')}/v1/traces` : null;
}

/** An endpoint for a log line: no user info, no query (either may hold a token). */
function redacted(endpoint: string): string {
  try {
    const u = new URL(endpoint);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return '(unparsable URL)';
  }
}

/**
 * Registers a NodeTracerProvider (AsyncLocalStorage context manager, W3C
 * trace-context and baggage propagators) with a BatchSpanProcessor and the
 * OTLP/HTTP exporter, when {@link tracingEndpoint} is set. Call before the
 * application boots; the SDK modules are loaded only then.
 * @returns the running SDK, or null when tracing is off.
 */
export async function startTracing(env: NodeJS.ProcessEnv = process.env): Promise<Tracing | null> {
  const endpoint = tracingEndpoint(env);
  if (!endpoint) return null;
  const [
    { NodeTracerProvider, BatchSpanProcessor },
    { OTLPTraceExporter },
    { defaultResource, resourceFromAttributes },
  ] = await Promise.all([
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
  ]);
  const serviceName = env.OTEL_SERVICE_NAME?.trim() || DEFAULT_SERVICE_NAME;
  const provider = new NodeTracerProvider({
    resource: defaultResource().merge(resourceFromAttributes({ 'service.name': serviceName })),
    // The exporter follows the OTLP variables itself (endpoint, headers, timeout, compression).
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  provider.register();
  return {
    endpoint: redacted(endpoint),
    serviceName,
    async shutdown(timeoutMs = 5000) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        provider.shutdown().catch(() => undefined),
        new Promise((r) => (timer = setTimeout(r, timeoutMs))),
      ]);
      clearTimeout(timer);
    },
  };
}
