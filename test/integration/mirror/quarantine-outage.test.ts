/**
 * PostgreSQL unavailable is never a reason to quarantine: with a private
 * PostgreSQL stopped under a running mirror writer, and a bad entry among
 * 400 good ones in the stream, the writer quarantines nothing and
 * acknowledges nothing while the server is down (it backs off, the entries
 * wait in Redis), and once it is back it writes the 400 and quarantines the
 * bad one only. (The shared server is never stopped: test/support/private-postgres.ts.)
 */
import { Registry } from 'prom-client';
import type { DataSource } from 'typeorm';
import { MirrorMetrics } from '../../../src/mirror/mirror-metrics';
import { MirrorWriter } from '../../../src/mirror/mirror-writer';
import { openPostgres } from '../../../src/postgres/data-source';
import { normalizeEnqueue } from '../../../src/core/job-options';
import { outbox } from '../../support/mirror';
import { v7At } from '../../support/postgres';
import { PrivatePostgres, privatePostgres } from '../../support/private-postgres';
import { openStore, sleep, TestStore } from '../../support/redis';
import { waitUntil } from '../../support/redis-server';

jest.setTimeout(90_000);

let pg: PrivatePostgres;
let t: TestStore;
let ds: DataSource;
beforeAll(async () => {
  pg = await privatePostgres('audit-quarantine-outage');
  await pg.start();
  ds = (await openPostgres(pg.url('sluice_quarantine_outage'), 4)).dataSource;
  t = await openStore('audit-q-outage');
});
afterAll(async () => {
  await ds?.destroy().catch(() => undefined);
  await t?.close();
  await pg?.destroy();
});

test('PostgreSQL down: nothing quarantined nor acknowledged; back: the good entries written, the bad one alone quarantined', async () => {
  const q = 'qo';
  const lines: { msg: string }[] = [];
  const at = () => (_o: object, msg: string) => void lines.push({ msg });
  const metrics = new MirrorMetrics(new Registry());
  await t.store.enqueue([normalizeEnqueue({ type: 'x', queue: q }, 1e6)]);
  const w = new MirrorWriter(t.stores, ds, { writerId: 'qo-w', metrics }, { debug: at(), info: at(), warn: at(), error: at() });
  w.start();
  try {
    await waitUntil('the first entry mirrored', async () => (await t.redis.xlen(t.keys(q).events)) === 0, 10_000, 20);
    await pg.stop('immediate');
    const ids = (await t.store.enqueue(Array.from({ length: 200 }, () => normalizeEnqueue({ type: 'x', queue: q }, 1e6)))).map((r) => r.id);
    // Refused by PostgreSQL for its data (a time out of range) once it is back.
    const h = ['cancelled', 'waiting', 'cancelled', '0', '1e19', v7At(Date.now()), '', '', '', '', ''].join('|');
    const bad = (await (t.redis as any).xadd(t.keys(q).events, '*', 'h', h)) as string;
    ids.push(...(await t.store.enqueue(Array.from({ length: 200 }, () => normalizeEnqueue({ type: 'x', queue: q }, 1e6)))).map((r) => r.id));
    await sleep(4_000);
    // Down: the writer retried with back-off and gave up on nothing.
    expect(w.stats.quarantined).toBe(0);
    expect(w.stats.bisections).toBe(0);
    expect(await metrics.registry.getSingleMetricAsString('sluice_audit_batch_failures_total')).toMatch(/ [1-9]\d*$/m);
    expect((await outbox(t.redis, t, [q])).len).toBe(401);
    expect(lines.filter((l) => l.msg === 'audit batch failed: events stay in Redis, retrying')).toHaveLength(1);

    await pg.start();
    await waitUntil('the stream drained', async () => {
      const o = await outbox(t.redis, t, [q]);
      return o.len === 0 && o.pending === 0;
    }, 30_000, 50);
    expect(lines.some((l) => l.msg === 'audit writer: postgres is back, mirroring resumed')).toBe(true);
    const rows = await ds.query(`SELECT entry_id, error_code FROM audit_quarantine`);
    expect(rows).toEqual([{ entry_id: bad, error_code: '22008' }]);
    const [{ n }] = await ds.query(`SELECT count(*)::int AS n FROM jobs WHERE id = ANY($1::uuid[])`, [ids]);
    expect(n).toBe(400);
    expect(w.stats.quarantined).toBe(1);
  } finally {
    await w.stop();
  }
});
