import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from '../logging/logger';
import { SluiceMetrics } from '../metrics/sluice-metrics';

/**
 * Observes every answered request (Fastify `onResponse` hook):
 * - one debug line: `{reqId, method, route, status, ms, bytes}` where bytes is
 *   the request body's Content-Length (never a payload value); errors are
 *   logged by the exception filter already;
 * - the HTTP request metrics of {@link SluiceMetrics}, when the app has them.
 * Route is the matched pattern (`/jobs/:id`), `unmatched` for unknown paths,
 * so neither the log nor the metrics carry ids in that field.
 */
export function registerRequestLog(app: NestFastifyApplication, log: Logger): void {
  let metrics: SluiceMetrics | null = null;
  try {
    metrics = app.get(SluiceMetrics, { strict: false });
  } catch {
    /* no metrics module in this app */
  }
  app
    .getHttpAdapter()
    .getInstance()
    .addHook('onResponse', (req: FastifyRequest, reply: FastifyReply, done: () => void) => {
      const route = req.routeOptions.url ?? 'unmatched';
      const ms = reply.elapsedTime;
      metrics?.httpRequest(req.method, route, reply.statusCode, ms);
      // Checked first: building the line costs more than the hook otherwise.
      if (log.isLevelEnabled('debug')) {
        const len = req.headers['content-length'];
        log.debug(
          { reqId: req.id, method: req.method, route, path: req.url.split('?')[0], status: reply.statusCode, ms: Math.round(ms * 100) / 100, bytes: len === undefined ? 0 : Number(len) },
          'request',
        );
      }
      done();
    });
}
