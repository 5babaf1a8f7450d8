import 'reflect-metadata';
import { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module';
import { ConfigError, loadConfig, SluiceConfig } from './config/config';
import { createLogger } from './logging/logger';
import { createHttpApp } from './http/http-app';

/**
 * Entry point: `node dist/main.js`. Validates the environment (a bad value
 * stops the process naming the variable), starts the roles named by ROLE,
 * and on SIGTERM/SIGINT drains (workers finish or release their jobs within
 * SHUTDOWN_GRACE_MS) and exits 0.
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
  const module = AppModule.forRoles(config, log);
  let app: INestApplicationContext;
  if (config.roles.has('api')) {
    // abortOnError off: a failing provider (Redis or Postgres unreachable) reaches the
    // catch below and is printed as one line, not a stack trace.
    const http = await createHttpApp(module, config, log);
    try {
      await http.listen(config.port, config.host);
    } catch (e) {
      // Port taken etc.: stop the other roles cleanly (a worker may hold jobs).
      await http.close().catch(() => undefined);
      throw e;
    }
    log.info({ url: `http://${config.host}:${config.port}`, roles: [...config.roles] }, `sluice listening on http://${config.host}:${config.port}`);
    app = http;
  } else {
    app = await NestFactory.createApplicationContext(module, { logger: false, abortOnError: false });
    log.info({ roles: [...config.roles] }, 'sluice started');
  }

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    try {
      await app.close();
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
