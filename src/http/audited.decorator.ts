import { applyDecorators, CallHandler, ExecutionContext, Injectable, NestInterceptor, SetMetadata, UseInterceptors } from '@nestjs/common';
import type { Observable } from 'rxjs';
import { tap } from 'rxjs/operators';

/** Metadata key of a route's operator-audit declaration. */
export const AUDIT_METADATA = 'sluice:audit';

/**
 * Where the target of an audited action is read (never from anything but the
 * one named field; a value that is not a string of 1..200 characters gives no target):
 * - `param`: a route parameter (`/queues/:name/pause` → `{param: 'name'}`);
 * - `params`: route parameters joined with `/`, for a thing named within
 *   another (`/queues/:name/keys/:key` → `{params: ['name', 'key']}` → `emails/customer-42`;
 *   no target unless each is a non-empty string);
 * - `paramBody`: a route parameter and a top-level string field of the body joined with `/`
 *   (`POST /orgs/:org/members` `{username}` → `acme/ana@example.com`);
 * - `query`: a query-string field;
 * - `body`: a top-level string field of the JSON body (a queue name, never a payload);
 * - `result`: a top-level field of the answer (the id of what the call created).
 */
export type AuditTarget = { param: string } | { params: string[] } | { paramBody: [string, string] } | { query: string } | { body: string } | { result: string };

/**
 * A route's operator-audit declaration (docs/security.md, "Operator log"):
 * - `{audit: {action, target?}}`: every answer of this route is recorded;
 * - `{exempt: reason}`: a state-changing route deliberately not recorded.
 */
export type AuditDeclaration = { audit: { action: string; target: AuditTarget | null } } | { exempt: string };

/** Where the `result` target is left on the request for the onResponse hook. */
export const AUDIT_RESULT_TARGET = Symbol('sluice.auditResultTarget');

/** Copies the named field of a route's answer onto the request (for `{result: field}` targets). */
@Injectable()
class AuditResultInterceptor implements NestInterceptor {
  intercept(ctx: ExecutionContext, next: CallHandler): Observable<unknown> {
    const decl = Reflect.getMetadata(AUDIT_METADATA, ctx.getHandler()) as AuditDeclaration | undefined;
    const field = decl && 'audit' in decl && decl.audit.target && 'result' in decl.audit.target ? decl.audit.target.result : null;
    const req = ctx.switchToHttp().getRequest<Record<symbol, unknown>>();
    return next.handle().pipe(
      tap((value: unknown) => {
        if (field && value && typeof value === 'object') req[AUDIT_RESULT_TARGET] = (value as Record<string, unknown>)[field];
      }),
    );
  }
}

/**
 * Records every answer of this route in the operator audit log (src/oplog):
 * who (the principal's label), `action` (e.g. `queue.pause`), the target, when,
 * the client address and the HTTP status, refusals (401/403/409…) included.
 * Every POST/PUT/PATCH/DELETE route carries `@Audited` or {@link NotAudited};
 * the boot refuses one with neither (src/oplog/oplog-routes.ts).
 */
export function Audited(action: string, target: AuditTarget | null = null): MethodDecorator {
  const decl: AuditDeclaration = { audit: { action, target } };
  if (target && 'result' in target) return applyDecorators(SetMetadata(AUDIT_METADATA, decl), UseInterceptors(AuditResultInterceptor));
  return SetMetadata(AUDIT_METADATA, decl);
}

/** A state-changing route that is deliberately not in the operator audit log; `reason` says why (for the reader). */
export function NotAudited(reason: string): MethodDecorator {
  return SetMetadata(AUDIT_METADATA, { exempt: reason } satisfies AuditDeclaration);
}

/** Why the external worker protocol (claim, heartbeat, complete, fail, release) is not audited. */
export const WORKER_PROTOCOL = 'external worker protocol: job processing, recorded in the job history (events, executions), and as frequent as jobs';
