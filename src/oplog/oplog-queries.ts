import type { DataSource } from 'typeorm';
import { checkLimit, decodeIdCursor, encodeIdCursor, epochMs } from '../history/common';
import type { Page } from '../history/list-jobs';
import type { OplogRecord } from './oplog-record';

/** One entry of `GET /audit-log`: the stored record with its time as ISO 8601. */
export type ApiOplogEntry = Omit<OplogRecord, 'at'> & { at: string };

interface Row {
  id: string;
  at_ms: number;
  project: string;
  actor: string;
  actor_kind: string;
  action: string;
  target: string | null;
  method: string;
  path: string;
  status: number;
  address: string | null;
  request_id: string | null;
}

/**
 * `GET /audit-log?cursor=&limit=`: a project's operator-audit records, newest
 * first, keyset pagination on the UUIDv7 id (index `(project, id)`, read
 * backwards, no OFFSET); `limit + 1` rows tell whether a next page exists.
 * Records still in the Redis buffer (≤ ~250 ms with PostgreSQL up) are not listed yet.
 * @returns `{items, nextCursor}`; nextCursor null on the last page.
 * @throws ValidationError (400) on a bad limit (1..500) or a cursor this endpoint did not make.
 */
export async function listOplog(db: DataSource, project: string, cursor: string | undefined, limit: number | undefined): Promise<Page<ApiOplogEntry>> {
  const n = checkLimit(limit);
  const after = cursor !== undefined && cursor !== '' ? decodeIdCursor(cursor) : null;
  const params: unknown[] = [project, n + 1];
  if (after) params.push(after);
  const rows: Row[] = await db.query(
    `SELECT id, ${epochMs('at')} AS at_ms, project, actor, actor_kind, action, target, method, path, status, address, request_id
       FROM operator_audit WHERE project = $1${after ? ' AND id < $3::uuid' : ''} ORDER BY id DESC LIMIT $2`,
    params,
  );
  const more = rows.length > n;
  const items = rows.slice(0, n).map(toEntry);
  return { items, nextCursor: more ? encodeIdCursor(items[items.length - 1].id) : null };
}

function toEntry(r: Row): ApiOplogEntry {
  return {
    id: r.id,
    at: new Date(Number(r.at_ms)).toISOString(),
    project: r.project,
    actor: r.actor,
    actorKind: r.actor_kind,
    action: r.action,
    target: r.target,
    method: r.method,
    path: r.path,
    status: Number(r.status),
    address: r.address,
    requestId: r.request_id,
  };
}
