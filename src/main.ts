import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import { ConfigError, loadConfig, SluiceConfig } from './config/config';
import { createLogger } from './logging/logger';
import { checkRedisAtStart } from './redis/startup-check';
import { startTracing } from './telemetry/tracing';

/** The URL the server is bound to (PORT=0 picks a free port: the bound one is logged). */
function listenUrl(addr: AddressInfo | string | null, config: SluiceConfig): string {
  const port = addr && typeof addr === 'object' ? addr.port : config.port;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  return `http://${host}:${port}`;
}

/**
 * Entry point: `node dist/main.js`. Validates the environment (a bad value
 * stops the process naming the variable), checks that Redis answers as
 * configured (src/redis/startup-check.ts), starts the roles named by ROLE
 * (every role listens on HOST:PORT for the ops endpoints),
 * and on SIGTERM/SIGINT drains (workers finish or release their jobs within
 * SHUTDOWN_GRACE_MS), flushes the spans still batched and exits 0.
 * OpenTelemetry tracing starts before the roles load, when an OTLP endpoint is set (src/telemetry/tracing.ts).
 */
async function bootstrap(): Promise<void> {
  let config: SluiceConfig;
  try {
    config = loadConfig();
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`sluice: configuration error: ${e.message}\n`);
      process.exit(2);
    }
    throw e;
  }
  const log = createLogger(config.logLevel);
  // Before any role touches Redis: a configuration that cannot work (nothing
  // listening, Sentinels that do not know the master, TLS to a plain node, a
  // database the server lacks) stops the process within 30 s naming the
  // variable, instead of every client retrying in silence.
  await checkRedisAtStart(config, log);
  // Loaded only now: a start that fails above does not first spend seconds
  // loading Nest, Fastify, TypeORM and every role (on a loaded host, most of
  // the time to the message).
  const [{ AppModule }, { createHttpApp }] = await Promise.all([import('./app.module'), import('./server/http-app')]);
  const tracing = await startTracing();
  if (tracing) log.info({ endpoint: tracing.endpoint, serviceName: tracing.serviceName }, 'tracing: exporting spans over OTLP/HTTP');
  const module = AppModule.forRoles(config, log);
  // Every role listens: the ops endpoints (/healthz, /readyz, /metrics) for
  // probes and Prometheus; the API routes only with the api role.
  // abortOnError off: a failing provider (Redis or Postgres unreachable) reaches the
  // catch below and is printed as one line, not a stack trace.
  const app = await createHttpApp(module, config, log);
  try {
    await app.listen(config.port, config.host);
  } catch (e) {
    // Port taken etc.: stop the other roles cleanly (a worker may hold jobs).
    await app.close().catch(() => undefined);
    await tracing?.shutdown();
    throw e;
  }
  const url = listenUrl(app.getHttpServer().address(), config);
  log.info({ url, roles: [...config.roles] }, `sluice listening on ${url}`);

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    try {
      await app.close();
      // After the workers drained: their last spans are in the batch.
      await tracing?.shutdown();
      process.exit(0);
    } catch (e) {
      log.error({ err: (e as Error).message }, 'shutdown failed');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

bootstrap().catch((e: Error) => {
  process.stderr.write(`sluice: failed to start: ${e.message}\n`);
  process.exit(1);
});
