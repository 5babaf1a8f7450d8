import { CallHandler, ExecutionContext, Injectable, NestInterceptor, StreamableFile } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { map, type Observable } from 'rxjs';
import { ForbiddenError } from '../core/errors';
import { hidePayloadsIn } from '../core/hidden-payloads';
import { markPayloadsHidden } from '../http/request-notes';
import { PRINCIPAL, type Principal } from './principal';

/**
 * The one place where `hidePayloads` (API.md v1.3) applies to HTTP answers
 * (global, after the guard): for a member who hides payloads, every answer of
 * every route goes through {@link hidePayloadsIn} — jobs, lists, the DLQ,
 * events, logs, flows, enqueue and retry answers alike, so a new route cannot
 * forget it. A large batch answer, streamed in slices, is hidden before it is
 * sliced (src/http/large-answer.ts reads the mark). The live events apply
 * the same function per event (src/dashboard/live/sse-client.ts).
 *
 * Searching by payload (`GET /jobs?payload=`) would tell the values by
 * elimination, and a claim hands the payload to run: both refused with 403
 * for such a member.
 */
@Injectable()
export class HidePayloadsInterceptor implements NestInterceptor {
  intercept(ctx: ExecutionContext, next: CallHandler): Observable<unknown> {
    const req = ctx.switchToHttp().getRequest<FastifyRequest>();
    const p = (req as unknown as Record<symbol, Principal | undefined>)[PRINCIPAL];
    if (!p?.hidePayloads) return next.handle();
    const q = req.query as Record<string, unknown> | undefined;
    if (q && q.payload !== undefined) throw new ForbiddenError('payloads are hidden from this member: searching by payload is not available');
    // Running a job needs its payload: a member who may not read payloads does not claim.
    if (req.routeOptions.url === '/queues/:name/claim') throw new ForbiddenError('payloads are hidden from this member: it cannot claim jobs');
    markPayloadsHidden(req);
    // A StreamableFile is a large answer already hidden before it was sliced (src/http/large-answer.ts).
    return next.handle().pipe(map((answer: unknown) => (answer instanceof StreamableFile ? answer : hidePayloadsIn(answer))));
  }
}
