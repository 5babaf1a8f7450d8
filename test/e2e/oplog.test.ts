import { randomBytes } from 'node:crypto';
import { routeTable } from '../../src/http/route-table';
import { pruneOperatorAudit } from '../../src/maintenance/retention';
import { assertEveryChangeAudited } from '../../src/oplog/oplog-recorder';
import { startTestApi, type TestApi } from '../support/http';
import { v7At } from '../support/postgres';
import { waitUntil } from '../support/timing';

/**
 * The operator audit log (issue: security): every state-changing call but
 * enqueue and the worker protocol is recorded with who, what, target, when,
 * address, status and request id, refusals included; GET /audit-log (admin)
 * pages it newest first; retention prunes it.
 */
const BOOTSTRAP = 'sk_' + randomBytes(32).toString('base64url');
let api: TestApi;
let bootstrapId: string;
const admin = () => `Bearer ${BOOTSTRAP}`;

interface Row {
  id: string;
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
const rows = (): Promise<Row[]> => api.db.dataSource.query(`SELECT * FROM operator_audit ORDER BY id`);
const rowOf = async (requestId: string): Promise<Row> => waitUntil(`the audit row of request ${requestId}`, async () => (await rows()).find((r) => r.request_id === requestId), 10_000, 50);

beforeAll(async () => {
  api = await startTestApi('oplog', { AUTH: 'on', SLUICE_BOOTSTRAP_ADMIN_KEY: BOOTSTRAP });
  const keys = await api.http.get('/keys').set('authorization', admin());
  bootstrapId = keys.body.find((k: { name: string }) => k.name === 'bootstrap').id;
});
afterAll(() => api?.close());

test('every state-changing route is @Audited or @NotAudited; the exemptions are enqueue (jobs and flows) and the external worker protocol only; boot refuses an undeclared one', () => {
  const table = routeTable(api.app);
  const changing = table.filter((r) => ['POST', 'PUT', 'PATCH', 'DELETE'].includes(r.method));
  expect(changing.filter((r) => !r.audit)).toEqual([]);
  const exempt = changing.filter((r) => r.audit && 'exempt' in r.audit).map((r) => `${r.method} ${r.path}`).sort();
  expect(exempt).toEqual(['POST /flows', 'POST /jobs', 'POST /jobs/:id/complete', 'POST /jobs/:id/fail', 'POST /jobs/:id/heartbeat', 'POST /jobs/:id/release', 'POST /jobs/batch', 'POST /queues/:name/claim']);
  expect(changing.filter((r) => r.audit && 'audit' in r.audit).length).toBeGreaterThanOrEqual(12);
  expect(() => assertEveryChangeAudited([...table, { method: 'POST', path: '/new', required: ['admin'], handler: 'X.y', audit: null, takesBody: true }])).toThrow(/POST \/new \(X\.y\)/);
});

test('operator actions are recorded with actor, target, address, status and request id; enqueue is not; no body reaches a row', async () => {
  const op = await api.http.post('/keys').set('authorization', admin()).send({ name: 'oplog-operator', role: 'operator' });
  expect(op.status).toBe(201);
  const opKey = `Bearer ${op.body.secret}`;
  const opActor = `key:${op.body.id}`;
  const secretMarker = `marker-${randomBytes(6).toString('hex')}`;
  const done: { rid: string; action: string; target: string | null; status: number; actor: string; path: string; method: string }[] = [];
  const did = (res: { headers: Record<string, string>; status: number }, action: string, target: string | null, status: number, actor = opActor, method = '', path = '') => {
    expect(res.status).toBe(status);
    done.push({ rid: res.headers['x-request-id'], action, target, status, actor, method, path });
  };
  did(op as never, 'key.create', op.body.id, 201, `key:${bootstrapId}`, 'POST', '/keys');

  did(await api.http.put('/queues/ops-q').set('authorization', opKey).send({ maxConcurrency: 3 }), 'queue.configure', 'ops-q', 200, opActor, 'PUT', '/queues/:name');
  did(await api.http.post('/queues/ops-q/pause').set('authorization', opKey), 'queue.pause', 'ops-q', 200, opActor, 'POST', '/queues/:name/pause');
  did(await api.http.post('/queues/ops-q/resume').set('authorization', opKey), 'queue.resume', 'ops-q', 200, opActor, 'POST', '/queues/:name/resume');
  const job = await api.http.post('/jobs').set('authorization', opKey).send({ queue: 'ops-q', type: 'diag.echo', payload: { secret: secretMarker } });
  expect(job.status).toBe(201);
  const batch = await api.http.post('/jobs/batch').set('authorization', opKey).send({ jobs: [{ queue: 'ops-q', type: 'diag.echo', payload: { m: secretMarker } }] });
  expect(batch.status).toBe(201);
  did(await api.http.delete(`/jobs/${job.body.id}`).set('authorization', opKey), 'job.cancel', job.body.id, 200, opActor, 'DELETE', '/jobs/:id');
  did(
    await api.http.post(`/jobs/${job.body.id}/retry`).set('authorization', opKey).send({ payload: { secret: secretMarker } }),
    'job.retry',
    job.body.id,
    200,
    opActor,
    'POST',
    '/jobs/:id/retry',
  );
  did(await api.http.post('/jobs/dlq/retry').set('authorization', opKey).send({ queue: 'ops-q' }), 'dlq.retry_all', 'ops-q', 200, opActor, 'POST', '/jobs/dlq/retry');
  did(await api.http.delete('/jobs/dlq?queue=ops-q').set('authorization', opKey), 'dlq.purge', 'ops-q', 200, opActor, 'DELETE', '/jobs/dlq');
  did(await api.http.delete('/jobs/dlq').set('authorization', opKey), 'dlq.purge', null, 200, opActor, 'DELETE', '/jobs/dlq');
  const sched = await api.http
    .post('/schedules')
    .set('authorization', opKey)
    .send({ name: 'ops-digest', cron: '0 9 * * *', queue: 'ops-q', type: 'diag.echo', payload: { secret: secretMarker } });
  did(sched, 'schedule.create', sched.body.id, 201, opActor, 'POST', '/schedules');
  did(await api.http.patch(`/schedules/${sched.body.id}`).set('authorization', opKey).send({ enabled: false }), 'schedule.update', sched.body.id, 200, opActor, 'PATCH', '/schedules/:id');
  did(await api.http.delete(`/schedules/${sched.body.id}`).set('authorization', opKey), 'schedule.delete', sched.body.id, 200, opActor, 'DELETE', '/schedules/:id');
  // Refusals are recorded too: a role that may not (403, with who tried), no credentials (401), a missing job (404).
  did(await api.http.delete(`/keys/${op.body.id}`).set('authorization', opKey), 'key.revoke', op.body.id, 403, opActor, 'DELETE', '/keys/:id');
  did(await api.http.post('/queues/ops-q/pause'), 'queue.pause', 'ops-q', 401, 'none', 'POST', '/queues/:name/pause');
  did(await api.http.delete('/jobs/0190f5a0-0000-7000-8000-000000000001').set('authorization', opKey), 'job.cancel', '0190f5a0-0000-7000-8000-000000000001', 404, opActor, 'DELETE', '/jobs/:id');
  did(await api.http.delete(`/keys/${op.body.id}`).set('authorization', admin()), 'key.revoke', op.body.id, 200, `key:${bootstrapId}`, 'DELETE', '/keys/:id');
  // A public route acts as `public` (no credentials are looked at): a failed login, with the username as target.
  did(await api.http.post('/auth/login').send({ username: 'nobody@example.com', password: secretMarker }), 'auth.login', 'nobody@example.com', 401, 'public', 'POST', '/auth/login');

  for (const d of done) {
    const r = await rowOf(d.rid);
    expect({ action: r.action, target: r.target, status: r.status, actor: r.actor, method: r.method, path: r.path }).toEqual({
      action: d.action,
      target: d.target,
      status: d.status,
      actor: d.actor,
      method: d.method,
      path: d.path,
    });
    expect(r.actor_kind).toBe(['none', 'public'].includes(d.actor) ? d.actor : 'key');
    expect(r.project).toBe('default');
    expect(r.address).toBe('127.0.0.1');
  }
  const all = await rows();
  expect(all.filter((r) => r.path === '/jobs' || r.path === '/jobs/batch')).toEqual([]);
  expect(all.filter((r) => r.request_id === job.headers['x-request-id'] || r.request_id === batch.headers['x-request-id'])).toEqual([]);
  const dump = JSON.stringify(all);
  expect(dump).not.toContain(secretMarker);
  expect(dump).not.toContain(op.body.secret);
  expect(dump).not.toContain(BOOTSTRAP);
  expect(dump).not.toContain('maxConcurrency');
});

test('GET /audit-log: newest first, keyset pages that neither overlap nor skip; admin only; tampered cursor and bad limit → 400', async () => {
  for (let i = 0; i < 7; i++) expect((await api.http.post(`/queues/page-${i}/pause`).set('authorization', admin())).status).toBe(200);
  const expected: Row[] = await waitUntil('the pauses in PostgreSQL', async () => {
    const all = await rows();
    return all.filter((r) => r.target?.startsWith('page-')).length === 7 && all;
  });
  const ids: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const res: { status: number; body: { items: { id: string }[]; nextCursor: string | null } } = await api.http.get(`/audit-log?limit=3${cursor ? `&cursor=${cursor}` : ''}`).set('authorization', admin());
    expect(res.status).toBe(200);
    expect(res.body.items.length).toBeLessThanOrEqual(3);
    for (const e of res.body.items) {
      expect(Object.keys(e).sort()).toEqual(['action', 'actor', 'actorKind', 'address', 'at', 'id', 'method', 'path', 'project', 'requestId', 'status', 'target']);
      ids.push(e.id);
    }
    cursor = res.body.nextCursor;
    pages++;
  } while (cursor && pages < 100);
  expect(ids).toEqual(expected.map((r) => r.id).reverse());
  const first = await api.http.get('/audit-log?limit=1').set('authorization', admin());
  expect(first.body.items[0]).toMatchObject({ action: 'queue.pause', target: 'page-6', actor: `key:${bootstrapId}`, actorKind: 'key', status: 200, address: '127.0.0.1' });
  expect(Date.parse(first.body.items[0].at)).toBeGreaterThan(Date.now() - 60_000);

  const op = await api.http.post('/keys').set('authorization', admin()).send({ name: 'oplog-op2', role: 'operator' });
  expect((await api.http.get('/audit-log').set('authorization', `Bearer ${op.body.secret}`)).status).toBe(403);
  expect((await api.http.get('/audit-log')).status).toBe(401);
  const c = first.body.nextCursor as string;
  const tampered = [c.slice(0, -1) + (c.endsWith('A') ? 'B' : 'A') + 'x', 'not-a-cursor', c + '=', '../../etc'];
  for (const bad of tampered) {
    const r = await api.http.get(`/audit-log?cursor=${encodeURIComponent(bad)}`).set('authorization', admin());
    expect(r.status).toBe(400);
    expect(r.body.error.details[0].path).toBe('cursor');
  }
  for (const limit of ['0', '501', 'x']) expect((await api.http.get(`/audit-log?limit=${limit}`).set('authorization', admin())).status).toBe(400);
});

test('retention: records older than RETENTION_DAYS are pruned, newer ones kept', async () => {
  const old = v7At(Date.now() - 31 * 86_400_000);
  const recent = v7At(Date.now() - 29 * 86_400_000);
  for (const id of [old, recent]) {
    await api.db.dataSource.query(
      `INSERT INTO operator_audit (id, at, project, actor, actor_kind, action, target, method, path, status) VALUES ($1, now(), 'default', 'anonymous', 'anonymous', 'queue.pause', 'x', 'POST', '/queues/:name/pause', 200)`,
      [id],
    );
  }
  expect(await pruneOperatorAudit(api.db.dataSource, 30)).toBe(1);
  const left = (await rows()).map((r) => r.id);
  expect(left).toContain(recent);
  expect(left).not.toContain(old);
});

test('Redis loses the buffer stream and its consumer group: the flusher makes the group again and later records are written', async () => {
  const { createRedis } = await import('../../src/redis/connection');
  const { oplogKeys } = await import('../../src/redis/keys');
  const { REDIS_URL } = await import('../support/redis');
  const redis = createRedis({ redisUrl: REDIS_URL, redisClusterNodes: null });
  try {
    await redis.del(oplogKeys(api.prefix).stream);
    const r = await api.http.post('/queues/after-loss/pause').set('authorization', admin());
    expect(r.status).toBe(200);
    const row = await rowOf(r.headers['x-request-id']);
    expect(row).toMatchObject({ action: 'queue.pause', target: 'after-loss' });
  } finally {
    redis.disconnect();
  }
});
