import { randomBytes } from 'node:crypto';
import { oplogKeys } from '../../src/redis/keys';
import { createRedis } from '../../src/redis/connection';
import { REDIS_URL } from '../support/redis';
import { startTestApi, type TestApi } from '../support/http';
import { waitUntil } from '../support/timing';

/**
 * Issue 18, the second security probe (AUTH=on): each reproduction of the
 * report as a test. API.md "Security rules made exact (v1.2)".
 */
const ROOT = 'sk_' + randomBytes(32).toString('base64url');
const METRICS_TOKEN = 'mt_' + randomBytes(24).toString('base64url');
let api: TestApi;
let rootId: string;
const key: Record<'admin' | 'worker' | 'viewer', { id: string; secret: string }> = {} as never;
const bearer = (s: string) => `Bearer ${s}`;

beforeAll(async () => {
  api = await startTestApi('secprobe2', { AUTH: 'on', SLUICE_BOOTSTRAP_ADMIN_KEY: ROOT });
  for (const role of ['admin', 'worker', 'viewer'] as const) {
    const r = await api.http.post('/keys').set('authorization', bearer(ROOT)).send({ name: `probe-${role}`, role });
    expect(r.status).toBe(201);
    key[role] = { id: r.body.id, secret: r.body.secret };
  }
  const all = await api.http.get('/keys').set('authorization', bearer(ROOT));
  rootId = all.body.find((k: { root: boolean }) => k.root).id;
}, 60_000);
afterAll(() => api?.close());

/** The audit-log entries of the default project (root's view), newest first. */
const auditLog = async (): Promise<{ action: string; target: string | null; status: number; requestId: string | null }[]> =>
  (await api.http.get('/audit-log?limit=500').set('authorization', bearer(ROOT))).body.items;

/** Waits until the action answered with this request id is in GET /audit-log. */
const logged = (requestId: string) =>
  waitUntil(`request ${requestId} in GET /audit-log`, async () => (await auditLog()).find((e) => e.requestId === requestId), 10_000, 100);

describe('#1 a NUL in a path parameter never stops the operator log', () => {
  const HOSTILE: [string, string][] = [
    ['DELETE', '/keys/%00'],
    ['PUT', '/queues/%00'],
    ['POST', '/queues/%00/pause'],
    ['POST', '/queues/%00/resume'],
    ['DELETE', '/schedules/%00'],
    ['POST', '/jobs/%00/retry'],
    ['DELETE', '/jobs/%00'],
    ['DELETE', '/users/%00'],
  ];

  test('without credentials and as admin: 400 each, the refusals are recorded (target escaped), and a later action still reaches GET /audit-log', async () => {
    const rids: string[] = [];
    for (const [method, path] of HOSTILE) {
      for (const auth of [undefined, bearer(key.admin.secret)]) {
        let r = api.http[method.toLowerCase() as 'get'](path);
        if (auth) r = r.set('authorization', auth);
        const res = await r;
        expect([400, 401]).toContain(res.status);
        expect(res.body.error.code).toEqual(expect.any(String));
        rids.push(res.headers['x-request-id']);
      }
    }
    const after = await api.http.post('/queues/after-nul/pause').set('authorization', bearer(ROOT));
    expect(after.status).toBe(200);
    const entry = await logged(after.headers['x-request-id']);
    expect(entry).toMatchObject({ action: 'queue.pause', target: 'after-nul', status: 200 });
    const log = await auditLog();
    const first = log.find((e) => e.requestId === rids[0]);
    expect(first).toMatchObject({ action: 'key.revoke', target: '\\u0000' });
  });

  test('a buffered record PostgreSQL refuses (or that cannot be encoded) is quarantined with its reason; the records behind it flow', async () => {
    const { stream } = oplogKeys(api.prefix);
    const base = { project: 'default', actor: 'none', actorKind: 'none', action: 'key.revoke', method: 'DELETE', path: '/keys/:id', status: 400, address: '127.0.0.1', requestId: 'x' };
    const id = () => `0190f5a0-0000-7000-8000-${randomBytes(6).toString('hex')}`;
    // As a recorder of an older version would have buffered them: a raw NUL target (written, escaped), a status
    // PostgreSQL refuses (smallint), a time past what a Date holds; and text that is no record.
    const nulId = id();
    const badIds = [id(), id()];
    const r = createRedis({ redisUrl: REDIS_URL, redisClusterNodes: null });
    try {
      await r.xadd(stream, '*', 'r', JSON.stringify({ ...base, id: nulId, at: Date.now(), target: 'a\u0000b', requestId: nulId }));
      await r.xadd(stream, '*', 'r', JSON.stringify({ ...base, id: badIds[0], at: Date.now(), status: 99999, target: 't' }));
      await r.xadd(stream, '*', 'r', JSON.stringify({ ...base, id: badIds[1], at: 9e15, target: 't' }));
      await r.xadd(stream, '*', 'r', 'not json', 'x', '\u0000');
    } finally {
      r.disconnect();
    }
    const after = await api.http.post('/queues/after-bad-records/pause').set('authorization', bearer(ROOT));
    await logged(after.headers['x-request-id']);
    const q = await waitUntil(
      'the refused records in audit_quarantine',
      async () => {
        const rows: { stream_key: string; error_code: string; fields: { r: string } }[] = await api.db.dataSource.query(
          `SELECT stream_key, error_code, fields FROM audit_quarantine WHERE stream_key = $1`,
          [stream],
        );
        return rows.length >= 3 ? rows : undefined;
      },
      10_000,
      100,
    );
    expect(q.map((x) => x.fields.r).join(' ')).toContain(badIds[0]);
    expect(q.map((x) => x.fields.r).join(' ')).toContain(badIds[1]);
    expect(q.map((x) => x.error_code).sort()).toEqual(['22003', 'encoding', 'unreadable']);
    expect((await auditLog()).find((e) => e.requestId === nulId)).toMatchObject({ target: 'a\\u0000b' });
  });
});

describe('#2 root keys are root’s', () => {
  test("a project admin's GET /keys does not list root keys; DELETE of a root key → 404 and the root key keeps working", async () => {
    const list = await api.http.get('/keys').set('authorization', bearer(key.admin.secret));
    expect(list.status).toBe(200);
    expect(list.body.map((k: { id: string }) => k.id)).not.toContain(rootId);
    expect(list.body.every((k: { root: boolean }) => !k.root)).toBe(true);
    const del = await api.http.delete(`/keys/${rootId}`).set('authorization', bearer(key.admin.secret));
    expect(del.status).toBe(404);
    expect(del.body.error.code).toBe('not_found');
    expect((await api.http.get('/keys').set('authorization', bearer(ROOT))).status).toBe(200);
  });
});

describe('#3 worker keys claim only from external queues', () => {
  test('claim on a normal queue → 403 and no job leaves it; on an external queue → 200', async () => {
    expect((await api.http.post('/jobs').set('authorization', bearer(ROOT)).send({ queue: 'normal-q', type: 'diag.echo', payload: { s: 1 } })).status).toBe(201);
    const r = await api.http.post('/queues/normal-q/claim').set('authorization', bearer(key.worker.secret)).send({ workerId: 'w1', max: 10 });
    expect(r.status).toBe(403);
    expect(r.body.error.code).toBe('forbidden');
    expect(JSON.stringify(r.body)).not.toContain('lockToken');
    const q = await api.http.get('/queues/normal-q').set('authorization', bearer(ROOT));
    expect(q.body.counts).toMatchObject({ waiting: 1, active: 0 });
    expect((await api.http.post('/queues/never-made/claim').set('authorization', bearer(key.worker.secret)).send({ workerId: 'w1' })).status).toBe(403);
    expect((await api.http.put('/queues/ext-q').set('authorization', bearer(ROOT)).send({ external: true })).status).toBe(200);
    expect((await api.http.post('/jobs').set('authorization', bearer(ROOT)).send({ queue: 'ext-q', type: 'ext.task' })).status).toBe(201);
    const ok = await api.http.post('/queues/ext-q/claim').set('authorization', bearer(key.worker.secret)).send({ workerId: 'w1' });
    expect(ok.status).toBe(200);
    expect(ok.body.jobs).toHaveLength(1);
  });
});

describe('#4 #5 and query integers: bad query input → 400 validation_failed', () => {
  const from = new Date(Date.now() - 86_400_000).toISOString();
  const BAD = [
    '/jobs?queue=Q',
    '/jobs?queue=-x',
    '/jobs?queue=a%2Fb',
    `/jobs?queue=${encodeURIComponent("' OR 1=1--")}`,
    '/jobs?type=a%20b',
    '/jobs/dlq/all?queue=Q',
    `/jobs/dlq/all?queue=${encodeURIComponent("' OR 1=1--")}`,
    `/jobs?from=${from}&payload=${encodeURIComponent('{"a":"\\u0000"}')}`,
    `/jobs?from=${from}&payload=${encodeURIComponent('{"a":"\\ud800"}')}`,
    `/jobs?from=${from}&payload=${encodeURIComponent('{"\\udc00":1}')}`,
    `/jobs?from=${from}&payload=${encodeURIComponent('{"__proto__":{"x":1}}')}`,
    `/jobs?from=${from}&payload=${encodeURIComponent('{"constructor":{"prototype":{"x":1}}}')}`,
    '/jobs?limit=0x10',
    '/jobs?limit=1e1',
    '/jobs?limit=0b11',
    '/jobs?limit=%2010',
    '/jobs/dlq/all?limit=0x10',
    '/audit-log?limit=1e1',
    '/jobs/dlq/groups?limit=0o7',
    '/schedules/preview?cron=*%20*%20*%20*%20*&count=0x5',
  ];
  test.each(BAD)('GET %s → 400', async (url) => {
    const r = await api.http.get(url).set('authorization', bearer(ROOT));
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('validation_failed');
  });
  test('decimal digits still work', async () => {
    expect((await api.http.get('/jobs?limit=10&queue=good-q').set('authorization', bearer(ROOT))).status).toBe(200);
  });
});

describe('#6 POST /schedules/:id/run takes no body', () => {
  test('[1,2], {"payload":…} → 400; none or {} → 201', async () => {
    const s = await api.http.post('/schedules').set('authorization', bearer(ROOT)).send({ name: 'probe-run', cron: '0 3 * * *', queue: 'run-q', type: 'diag.echo' });
    expect(s.status).toBe(201);
    const url = `/schedules/${s.body.id}/run`;
    for (const body of ['[1,2]', '{"payload":{"a":1}}', '"x"', '1', 'null', '{"a":1}']) {
      const r = await api.http.post(url).set('authorization', bearer(ROOT)).set('content-type', 'application/json').send(body);
      expect([url, body, r.status]).toEqual([url, body, 400]);
      expect(r.body.error.code).toBe('validation_failed');
    }
    expect((await api.http.post(url).set('authorization', bearer(ROOT))).status).toBe(201);
    expect((await api.http.post(url).set('authorization', bearer(ROOT)).send({})).status).toBe(201);
  });
});

describe('#7 /metrics with AUTH=on', () => {
  test('no METRICS_TOKEN: none → 401 (no queue name shown); a project key (admin too) → 403; a root key → 200', async () => {
    const none = await api.http.get('/metrics');
    expect(none.status).toBe(401);
    expect(none.text).not.toContain('normal-q');
    expect((await api.http.get('/metrics').set('authorization', bearer(key.admin.secret))).status).toBe(403);
    expect((await api.http.get('/metrics').set('authorization', bearer(key.viewer.secret))).status).toBe(403);
    expect((await api.http.get('/metrics').set('authorization', 'Bearer nope')).status).toBe(401);
    expect((await api.http.get('/metrics').set('authorization', bearer(ROOT))).status).toBe(200);
  });

  test('with METRICS_TOKEN: that token or a root key → 200; none → 401; a project key → 403', async () => {
    const other = await startTestApi('secprobe2m', { AUTH: 'on', SLUICE_BOOTSTRAP_ADMIN_KEY: ROOT, METRICS_TOKEN });
    try {
      const k = await other.http.post('/keys').set('authorization', bearer(ROOT)).send({ name: 'm-admin', role: 'admin' });
      expect((await other.http.get('/metrics')).status).toBe(401);
      expect((await other.http.get('/metrics').set('authorization', bearer(k.body.secret))).status).toBe(403);
      expect((await other.http.get('/metrics').set('authorization', bearer(METRICS_TOKEN))).status).toBe(200);
      expect((await other.http.get('/metrics').set('authorization', bearer(ROOT))).status).toBe(200);
    } finally {
      await other.close();
    }
  });
});
