import type { CallHandler, ExecutionContext, NestInterceptor } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import type { Observable } from 'rxjs';
import { readsBody } from '../http/route-table';
import { ValidationError } from '../core/errors';

/**
 * Routes that read no body (no `@Body()` parameter: pause, resume, cancel,
 * `POST /schedules/:id/run`, the DELETEs…) take none, or `{}`: any other
 * body is a 400 `validation_failed` (API.md v1.2), not silently ignored — a
 * caller who sends `{"payload": …}` to a route that takes none learns it
 * was not used. Global interceptor: it runs after the guard (401/403 first).
 * The route table reads the same declaration (`RouteAccess.takesBody`).
 */
export class NoBodyInterceptor implements NestInterceptor {
  private readonly takes = new WeakMap<object, boolean>();

  intercept(ctx: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (ctx.getType() === 'http') {
      const handler = ctx.getHandler();
      let takes = this.takes.get(handler);
      if (takes === undefined) this.takes.set(handler, (takes = readsBody(ctx.getClass(), handler.name)));
      if (!takes) {
        const body = ctx.switchToHttp().getRequest<FastifyRequest>().body;
        if (body !== undefined && !isEmptyObject(body)) {
          throw new ValidationError('this route takes no body (none, or {})', [{ path: 'body', message: 'must be absent or {}: this route takes no body' }]);
        }
      }
    }
    return next.handle();
  }
}

function isEmptyObject(v: unknown): boolean {
  return v !== null && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length === 0;
}
