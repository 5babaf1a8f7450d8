import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { v7 as uuidv7 } from 'uuid';
import { attemptedBy, DEFAULT_PROJECT } from '../auth/principal';
import { routeTable, type RouteAccess } from '../http/route-table';
import type { Logger } from '../logging/logger';
import { OplogBuffer } from '../core/ports/oplog';
import { AUDIT_RESULT_TARGET, type AuditTarget } from '../http/audited.decorator';
import { OPLOG_BUFFER_MAX, targetValue, type OplogRecord } from './oplog-record';

const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
/** At most one warning per this many ms about records that could not be buffered. */
const WARN_EVERY_MS = 10_000;

/**
 * Boot check: every state-changing route (POST, PUT, PATCH, DELETE) declares
 * `@Audited(...)` or `@NotAudited(reason)`, so a new route cannot escape the
 * operator audit log without saying so.
 * @throws Error naming each undeclared route (the process does not start).
 */
export function assertEveryChangeAudited(table: RouteAccess[]): void {
  const missing = table.filter((r) => STATE_CHANGING.has(r.method) && !r.audit);
  if (missing.length) {
    throw new Error(`state-changing routes without @Audited or @NotAudited: ${missing.map((r) => `${r.method} ${r.path} (${r.handler})`).join(', ')}`);
  }
}

/** Counts of this process's recorder, for GET /metrics. */
export interface RecorderStats {
  /** Records that could not be buffered (Redis unreachable) since start. */
  failed: number;
}

/**
 * The write path of the operator audit log: a Fastify `onResponse` hook
 * (after the answer is sent, so it never delays one) that, for a route
 * declared `@Audited`, appends one record to the Redis buffer ({@link OplogBuffer}:
 * one script call, lua/recordAction-2.lua; one Map lookup for any other
 * route). The flusher (src/oplog/oplog-flusher.ts) moves the buffer into
 * PostgreSQL. When the buffer is full (OPLOG_BUFFER_MAX, PostgreSQL away)
 * the record is dropped and counted in Redis; when Redis cannot be reached it
 * is lost and counted here; both are logged (at most every 10 s) and exported.
 * Also runs the boot check {@link assertEveryChangeAudited}.
 */
export function registerOperatorAudit(app: NestFastifyApplication, log: Logger): RecorderStats {
  const table = routeTable(app);
  assertEveryChangeAudited(table);
  const stats: RecorderStats = { failed: 0 };
  const specs = new Map<string, Map<string, { action: string; target: AuditTarget | null }>>();
  for (const r of table) {
    if (!r.audit || !('audit' in r.audit)) continue;
    let byPath = specs.get(r.method);
    if (!byPath) specs.set(r.method, (byPath = new Map()));
    byPath.set(r.path, r.audit.audit);
  }
  if (!specs.size) return stats;
  const buffer = app.get(OplogBuffer, { strict: false });
  let lastWarn = 0;
  let unwarnedDrops = 0;
  const warn = (fields: Record<string, unknown>, msg: string) => {
    const now = Date.now();
    if (now - lastWarn < WARN_EVERY_MS) return false;
    lastWarn = now;
    log.warn(fields, msg);
    return true;
  };
  app
    .getHttpAdapter()
    .getInstance()
    .addHook('onResponse', (req: FastifyRequest, reply: FastifyReply, done: () => void) => {
      const spec = specs.get(req.method)?.get(req.routeOptions.url ?? '');
      if (spec) {
        const rec = buildRecord(req, reply.statusCode, spec);
        buffer.append(JSON.stringify(rec), OPLOG_BUFFER_MAX).then(
          (ok) => {
            if (ok) return;
            unwarnedDrops++;
            if (warn({ dropped: unwarnedDrops, max: OPLOG_BUFFER_MAX }, 'operator audit buffer full (PostgreSQL away?): records dropped')) unwarnedDrops = 0;
          },
          (e: Error) => {
            stats.failed++;
            warn({ failed: stats.failed, err: e.message }, 'operator audit: a record could not be buffered in Redis (lost)');
          },
        );
      }
      done();
    });
  return stats;
}

/**
 * Where an organization's own changes are filed (`/orgs/:org/...`): the scope `org:<name>`,
 * which no project name can be (`GET /orgs/:org/audit-log` reads it), so a member change is
 * seen by that organization's owners and admins, never in another tenant's project log.
 */
export function oplogScope(req: FastifyRequest): string | null {
  const org = (req.params as Record<string, unknown> | undefined)?.org;
  return typeof org === 'string' && /^[a-z0-9][a-z0-9_-]{0,63}$/.test(org) ? `org:${org}` : null;
}

/** The record of one answered request to an audited route. */
function buildRecord(req: FastifyRequest, status: number, spec: { action: string; target: AuditTarget | null }): OplogRecord {
  const p = attemptedBy(req);
  const at = Date.now();
  return {
    id: uuidv7(),
    at,
    project: oplogScope(req) ?? p?.project ?? DEFAULT_PROJECT,
    actor: p ? p.label : 'none',
    actorKind: p ? p.kind : 'none',
    action: spec.action,
    target: targetOf(req, spec.target),
    method: req.method,
    path: req.routeOptions.url ?? '',
    status,
    address: req.ip ?? null,
    requestId: req.id === undefined ? null : String(req.id),
  };
}

function targetOf(req: FastifyRequest, t: AuditTarget | null): string | null {
  if (!t) return null;
  const field = (o: unknown, k: string) => (o && typeof o === 'object' ? (o as Record<string, unknown>)[k] : undefined);
  if ('param' in t) return targetValue(field(req.params, t.param));
  if ('params' in t) {
    const parts = t.params.map((k) => field(req.params, k));
    return parts.every((v) => typeof v === 'string' && v.length > 0) ? targetValue(parts.join('/')) : null;
  }
  if ('paramBody' in t) {
    const parts = [field(req.params, t.paramBody[0]), field(req.body, t.paramBody[1])];
    return parts.every((v) => typeof v === 'string' && v.length > 0) ? targetValue(parts.join('/')) : null;
  }
  if ('query' in t) return targetValue(field(req.query, t.query));
  if ('body' in t) return targetValue(field(req.body, t.body));
  return targetValue((req as unknown as Record<symbol, unknown>)[AUDIT_RESULT_TARGET]);
}
