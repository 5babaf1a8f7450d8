import { payloadIndexName } from '../../src/queues/payload-search';
import { payloadSearchSql as searchSql } from '../../src/history/list-jobs';
import { startTestApi, TestApi } from '../support/http';
import { v7At } from '../support/postgres';
import { waitUntil } from '../support/timing';

type J = { id: string; queue: string; payload: Record<string, unknown> };

/**
 * The explorer's search (GET /jobs?from=&to=&payload=) on the full stack, and
 * the per-queue payload index (PUT /queues/:name {"payloadSearch": true}).
 */
describe('GET /jobs: time range and payload search (e2e)', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi('e2e-search', { ROLE: 'api,audit' });
  });
  afterAll(async () => {
    await api?.close();
  });
  const list = async (query: Record<string, string | number>) => {
    const res = await api.http.get('/jobs').query({ limit: 500, ...query });
    expect(res.status).toBe(200);
    return (res.body.items as J[]).map((j) => j.id).sort();
  };
  const bad = async (query: Record<string, string | number>, path: string) => {
    const res = await api.http.get('/jobs').query(query);
    expect({ status: res.status, path: res.body.error?.details?.[0]?.path }).toEqual({
      status: 400,
      path,
    });
  };
  const enqueue = async (jobs: { queue: string; payload: Record<string, unknown> }[]) => {
    const res = await api.http
      .post('/jobs/batch')
      .send({ jobs: jobs.map((j) => ({ type: 'diag.echo', ...j })) });
    expect(res.status).toBe(201);
    return (res.body.jobs as J[]).map((j) => j.id);
  };
  const mirrored = (ids: string[]) =>
    waitUntil(
      'mirrored',
      async () =>
        (
          await api.db.dataSource.query(
            `SELECT count(*)::int AS n FROM jobs WHERE id = ANY($1::uuid[])`,
            [ids],
          )
        )[0].n === ids.length,
      10000,
      50,
    );

  it('from/to keep the jobs created in [from, to), on any filter', async () => {
    const a = await enqueue([
      { queue: 'tr', payload: {} },
      { queue: 'tr', payload: {} },
    ]);
    await new Promise((r) => setTimeout(r, 20));
    const cut = new Date().toISOString();
    await new Promise((r) => setTimeout(r, 20));
    const b = await enqueue([{ queue: 'tr', payload: {} }]);
    await mirrored([...a, ...b]);
    expect(await list({ queue: 'tr', from: cut })).toEqual([...b].sort());
    expect(await list({ queue: 'tr', to: cut })).toEqual([...a].sort());
    expect(
      await list({ queue: 'tr', status: 'waiting', from: '2020-01-01T00:00:00Z', to: cut }),
    ).toEqual([...a].sort());
    expect(await list({ from: cut })).toEqual(expect.arrayContaining(b));
    await bad({ from: 'monday' }, 'from');
    await bad({ to: '2026-13-45T00:00:00Z' }, 'to');
    await bad({ from: cut, to: cut }, 'from');
  });

  it('payload: JSON containment within the range; validated', async () => {
    const ids = await enqueue([
      {
        queue: 'orders',
        payload: { orderId: 42, customer: { tier: 'gold' }, items: [{ sku: 'a' }, { sku: 'b' }] },
      },
      { queue: 'orders', payload: { orderId: 43, customer: { tier: 'gold' } } },
      { queue: 'orders', payload: { orderId: '42' } },
      { queue: 'other', payload: { orderId: 42 } },
    ]);
    await mirrored(ids);
    const from = new Date(Date.now() - 60_000).toISOString();
    expect(await list({ from, payload: '{"orderId":42}' })).toEqual([ids[0], ids[3]].sort());
    expect(await list({ from, payload: '{"orderId":42}', queue: 'orders' })).toEqual([ids[0]]);
    expect(await list({ from, payload: '{"customer":{"tier":"gold"}}' })).toEqual(
      [ids[0], ids[1]].sort(),
    );
    expect(await list({ from, payload: '{"items":[{"sku":"b"}]}' })).toEqual([ids[0]]);
    expect(await list({ from, payload: '{"orderId":"42"}' })).toEqual([ids[2]]);
    // Outside the range: nothing.
    expect(
      await list({
        from: '2026-01-01T00:00:00Z',
        to: '2026-01-02T00:00:00Z',
        payload: '{"orderId":42}',
      }),
    ).toEqual([]);
    await bad({ payload: '{"orderId":42}' }, 'from');
    await bad({ from, payload: '{"orderId":' }, 'payload');
    await bad({ from, payload: '[1]' }, 'payload');
    await bad({ from, payload: JSON.stringify({ a: 'x'.repeat(5000) }) }, 'payload');
    await bad(
      { from, payload: '{"a":{"a":{"a":{"a":{"a":{"a":{"a":{"a":{"a":1}}}}}}}}}' },
      'payload',
    );
    await bad(
      { from: '2026-01-01T00:00:00Z', to: '2026-03-01T00:00:00Z', payload: '{"a":1}' },
      'from',
    );
  });

  it('payloadSearch builds a partial GIN index that the search of that queue uses, and drops it', async () => {
    const res = await api.http.put('/queues/orders').send({ payloadSearch: true });
    expect(res.status).toBe(200);
    expect(['building', 'ready']).toContain(res.body.payloadSearch);
    await waitUntil(
      'index ready',
      async () => (await api.http.get('/queues/orders')).body.payloadSearch === 'ready',
      20000,
      100,
    );
    expect((await api.http.get('/queues/tr')).body.payloadSearch).toBe(false);
    const name = payloadIndexName('orders');
    const [idx] = await api.db.dataSource.query(
      `SELECT indexdef FROM pg_indexes WHERE indexname = $1`,
      [name],
    );
    expect(idx.indexdef).toMatch(
      /USING gin \(sluice_payload_jsonb\(payload\) jsonb_path_ops\) WHERE \(queue = 'orders'::text\)/,
    );
    // The planner can use it for this queue's searches (the search's own expression and queue condition), and only there:
    // sequential and plain index scans off, only a bitmap scan of a usable index is left.
    const plan = async (queue: string) => {
      const q = searchSql({ queue, payload: '{"orderId":42}', fromMs: 0, toMs: 2 ** 47 }, null, 50);
      expect(q.sql).toContain('j.queue = $3 AND sluice_payload_jsonb(j.payload) @> $4::jsonb');
      let text = '';
      await api.db.dataSource
        .transaction(async (m) => {
          await m.query('SET LOCAL enable_seqscan = off');
          await m.query('SET LOCAL enable_indexscan = off');
          // On a table this small the queue's other indexes are cheaper; out of the way (rolled back), the payload index is what is left.
          await m.query('DROP INDEX jobs_queue_status_id');
          await m.query('DROP INDEX jobs_queue_updated_at');
          const rows = (await m.query(
            `EXPLAIN SELECT j.id FROM jobs j WHERE j.queue = $1 AND sluice_payload_jsonb(j.payload) @> $2::jsonb`,
            [queue, q.params[3]],
          )) as {
            'QUERY PLAN': string;
          }[];
          text = rows.map((r) => r['QUERY PLAN']).join('\n');
          throw new Error('rollback');
        })
        .catch((e: Error) => {
          if (e.message !== 'rollback') throw e;
        });
      return text;
    };
    // jobs is partitioned by day (src/postgres/partitions.ts): each partition's own index, `<name>_<partition>`, all attached to the parent's.
    const orders = await plan('orders');
    expect(orders).toMatch(new RegExp(`Bitmap Index Scan on ${name}_d\\d{8}`));
    expect(orders).toContain(`${name}_kept`);
    expect(await plan('other')).not.toContain(name);
    const attached = await api.db.dataSource.query(
      `SELECT count(*)::int AS n, bool_and(x.indisvalid) AS valid FROM pg_inherits i JOIN pg_index x ON x.indexrelid = i.inhrelid WHERE i.inhparent = $1::regclass`,
      [name],
    );
    const parts = await api.db.dataSource.query(`SELECT count(*)::int AS n FROM pg_inherits WHERE inhparent = 'jobs'::regclass`);
    expect(attached[0]).toEqual({ n: parts[0].n, valid: true });
    // A payload that is not JSON (a hand-made row) never stops a write to the indexed queue.
    await api.db.dataSource.query(
      `INSERT INTO jobs (id, queue, type, status, priority, attempts, max_attempts, backoff, timeout_ms, payload, execution_seq, created_at, run_at, updated_at, last_event_ms, last_event_seq)
       VALUES ($1, 'orders', 't', 'waiting', 0, 0, 1, '', 1000, 'not json', 0, now(), now(), now(), 0, 0)`,
      [v7At(Date.now())],
    );
    expect(
      await list({
        from: new Date(Date.now() - 60_000).toISOString(),
        payload: '{"orderId":42}',
        queue: 'orders',
      }),
    ).toHaveLength(1);
    const off = await api.http.put('/queues/orders').send({ payloadSearch: false });
    expect(off.body.payloadSearch).toBe(false);
    expect(
      await api.db.dataSource.query(`SELECT 1 FROM pg_indexes WHERE indexname = $1`, [name]),
    ).toEqual([]);
    expect((await api.http.put('/queues/orders').send({ payloadSearch: 'yes' })).status).toBe(400);
  });
});
