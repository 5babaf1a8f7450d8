import { ValidationError } from '../core/errors';

/**
 * Routes that read no body (no `@Body()` parameter: pause, resume, cancel,
 * `POST /schedules/:id/run`, the DELETEs…) take none, or `{}`: any other
 * body is a 400 `validation_failed` (API.md v1.2), not silently ignored — a
 * caller who sends `{"payload": …}` to a route that takes none learns it was
 * not used. Checked by the one guard once the credentials passed (401/403
 * first), from the same declaration the route table reads
 * (`RouteAccess.takesBody`, `readsBody`): no interceptor on the hot path.
 * @param body the parsed body (undefined when none was sent).
 * @throws ValidationError when `body` is present and not `{}`.
 */
export function refuseUnreadBody(body: unknown): void {
  if (body === undefined || isEmptyObject(body)) return;
  throw new ValidationError('this route takes no body (none, or {})', [{ path: 'body', message: 'must be absent or {}: this route takes no body' }]);
}

function isEmptyObject(v: unknown): boolean {
  return v !== null && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length === 0;
}
