import { ArgumentsHost, Catch, ExceptionFilter } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from '../logging/logger';
import { errorBody, mapError } from '../http/error-envelope';

/**
 * The one exception filter: every error (engine, validation, Nest, Fastify
 * body parsing, unreachable Redis/Postgres) leaves as the API.md envelope
 * `{error: {code, message, details, requestId}}`. Unexpected errors answer
 * 500 `internal` without a stack trace and are logged with it; 4xx are
 * logged at debug level only (clients' mistakes, possibly frequent). Errors
 * are logged through the logger's `err` serializer (src/logging/safe-error.ts),
 * which drops SQL parameters, Redis arguments and quoted values.
 */
@Catch()
export class EnvelopeExceptionFilter implements ExceptionFilter {
  constructor(private readonly log: Logger) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const ctx = host.switchToHttp();
    const reply = ctx.getResponse<FastifyReply>();
    const req = ctx.getRequest<FastifyRequest>();
    const m = mapError(exception);
    const fields = { reqId: req.id, method: req.method, path: req.url.split('?')[0], status: m.status, code: m.code };
    if (m.unexpected) this.log.error({ ...fields, err: exception }, 'request failed');
    else if (m.status >= 500) this.log.warn({ ...fields, err: exception }, 'request refused: service unavailable');
    else this.log.debug(fields, m.message);
    if (reply.sent) return;
    void reply.status(m.status).headers(m.headers).send(errorBody(m, String(req.id)));
  }
}
