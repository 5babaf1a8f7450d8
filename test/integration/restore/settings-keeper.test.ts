/**
 * Queue settings kept in PostgreSQL (src/queues/settings-keeper.ts, API.md
 * v1.3 "Security and recovery rules made exact"), on real Redis and
 * PostgreSQL: the copy follows every change; Redis that lost a queue gets it
 * back whole, also when a partial change comes first; a change made while
 * PostgreSQL is away is copied later; concurrent changes from two processes
 * leave PostgreSQL with what Redis holds.
 */
import { createDataSource } from '../../../src/postgres/data-source';
import { asChange, SettingsKeeper } from '../../../src/queues/settings-keeper';
import { openTestDb, TestDb } from '../../support/postgres';
import { deleteByPrefix, openStore, TestStore } from '../../support/redis';
import type Redis from 'ioredis';

let t: TestStore;
let db: TestDb;
let keeper: SettingsKeeper;

beforeAll(async () => {
  t = await openStore('keeper');
  db = await openTestDb('keeper');
  keeper = new SettingsKeeper(db.dataSource, t.stores.queues);
});

afterAll(async () => {
  await t?.close();
  await db?.close();
});

const copy = async (queue: string) => {
  const [row] = await db.dataSource.query(`SELECT settings FROM queue_settings WHERE queue = $1`, [
    queue,
  ]);
  const ov = await db.dataSource.query(
    `SELECT key, limits FROM queue_key_overrides WHERE queue = $1 ORDER BY key`,
    [queue],
  );
  return { config: row?.settings ?? null, overrides: ov };
};
const lose = () => deleteByPrefix(t.redis as Redis, t.prefix);

test('the copy follows each change; after a loss a partial change lands on the whole settings given back', async () => {
  const q = 'default/orders';
  const { queues } = t.stores;
  await keeper.change(q, () =>
    queues.configure(q, {
      external: true,
      maxConcurrency: 4,
      defaults: { maxAttempts: 9 },
      agingMs: 3000,
      summaryIncludesPayload: true,
    }),
  );
  await keeper.change(q, () => queues.setKeyOverride(q, 'acme', { concurrency: 2 }));
  await keeper.change(q, () => queues.configure(q, { paused: true }));
  const live = (await queues.snapshot(q))!;
  expect(live.kept).toBe(true);
  expect(await copy(q)).toEqual(live.snapshot);
  expect(live.snapshot.config).toMatchObject({
    paused: true,
    external: true,
    maxConcurrency: 4,
    agingMs: 3000,
    defaults: { maxAttempts: 9 },
    summaryIncludesPayload: true,
  });

  await lose();
  expect(await queues.snapshot(q)).toBeNull();
  // A partial change first (an operator's PUT before the restore watch's pass): the rest is not lost.
  await keeper.change(q, () => queues.configure(q, { maxConcurrency: 6 }));
  const after = (await queues.snapshot(q))!;
  expect(after.snapshot).toEqual({
    ...live.snapshot,
    config: { ...live.snapshot.config, maxConcurrency: 6 },
  });
  expect(await copy(q)).toEqual(after.snapshot);
});

test('restoreAll gives every kept queue back (listed again) and copies queues kept only in Redis', async () => {
  const { queues } = t.stores;
  await keeper.change('default/a', () => queues.configure('default/a', { paused: true }));
  await keeper.change('default/b', () =>
    queues.configure('default/b', { rateLimit: { max: 5, durationMs: 1000 } }),
  );
  // A queue configured before the copy existed: Redis alone holds its settings.
  await queues.configure('default/old', { maxConcurrency: 2 });
  await t.redis.hdel(t.keys('default/old').meta, 'cfg');
  const r1 = await keeper.restoreAll();
  expect(r1).toMatchObject({ restored: 0, failed: 0 });
  expect((await copy('default/old')).config).toMatchObject({ maxConcurrency: 2 });

  const want = await Promise.all(
    ['default/a', 'default/b', 'default/old', 'default/orders'].map((q) => queues.snapshot(q)),
  );
  await lose();
  const r2 = await keeper.restoreAll();
  expect(r2).toEqual({ restored: 4, saved: 0, failed: 0 });
  expect(await queues.list()).toEqual(
    expect.arrayContaining(['default/a', 'default/b', 'default/old', 'default/orders']),
  );
  expect(
    await Promise.all(
      ['default/a', 'default/b', 'default/old', 'default/orders'].map((q) => queues.snapshot(q)),
    ),
  ).toEqual(want);
  // Once given back, a second pass changes nothing.
  expect(await keeper.restoreAll()).toEqual({ restored: 0, saved: 0, failed: 0 });
});

test('PostgreSQL away: the change is live at once, noted unsaved, and copied once PostgreSQL answers', async () => {
  const { queues } = t.stores;
  const gone = createDataSource(db.url, 1);
  await gone.initialize();
  await gone.destroy();
  const offline = new SettingsKeeper(gone, queues);
  const q = 'default/outage';
  await offline.change(q, () => queues.configure(q, { paused: true, maxConcurrency: 1 }));
  expect((await queues.settings(q))!.paused).toBe(true);
  expect(await queues.unsaved()).toContain(q);
  expect((await copy(q)).config).toBeNull();
  expect(await keeper.saveUnsaved()).toBe(1);
  expect(await queues.unsaved()).not.toContain(q);
  expect((await copy(q)).config).toMatchObject({ paused: true, maxConcurrency: 1 });
});

test('concurrent changes from two processes leave PostgreSQL with what Redis holds', async () => {
  const { queues } = t.stores;
  const other = createDataSource(db.url, 4);
  await other.initialize();
  try {
    const second = new SettingsKeeper(other, queues);
    const q = 'default/race';
    for (let round = 0; round < 5; round++) {
      await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          (i % 2 ? keeper : second).change(q, () =>
            queues.configure(q, { maxConcurrency: round * 100 + i + 1, agingMs: 1000 + i }),
          ),
        ),
      );
      expect(await copy(q)).toEqual((await queues.snapshot(q))!.snapshot);
    }
  } finally {
    await other.destroy();
  }
});

test('asChange sets exactly the snapshot: fields not set are removed', async () => {
  const { queues } = t.stores;
  const q = 'default/exact';
  await queues.configure(q, {
    maxConcurrency: 3,
    defaults: { timeoutMs: 5000 },
    keyConcurrency: 2,
  });
  const plain = (await queues.snapshot('default/a'))!.snapshot.config;
  await queues.configure(q, asChange(plain));
  expect((await queues.snapshot(q))!.snapshot.config).toEqual(plain);
});

test('a copy kept before summaryIncludesPayload existed gives it back off', () => {
  const c = asChange({ paused: false, external: false, maxConcurrency: null, rateLimit: null, defaults: { maxAttempts: null, backoff: null, timeoutMs: null }, keyConcurrency: null, keyRateLimit: null, fairness: null, agingMs: null } as never);
  expect(c.summaryIncludesPayload).toBe(false);
});
