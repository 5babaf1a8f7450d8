import { DataSource } from 'typeorm';
import { dropDatabase, ensureDatabase, openPostgres } from '../../../src/postgres/data-source';
import { freshDatabaseUrl } from '../../support/postgres';

/**
 * Ten processes started at once against a missing database (C25's worker
 * processes, a deployment's replicas): every one must come up. Concurrent
 * CREATE DATABASE of one name fails with 23505 on the catalog's unique index
 * for all but one, which once crashed 9 of C25's 10 workers at boot.
 */
describe('a missing database, opened by many at once', () => {
  const urls: string[] = [];
  afterAll(async () => {
    for (const u of urls) await dropDatabase(u);
  });

  it('is created exactly once, and every caller gets it', async () => {
    const url = freshDatabaseUrl('race');
    urls.push(url);
    const created = await Promise.all(Array.from({ length: 10 }, () => ensureDatabase(url)));
    expect(created.filter(Boolean)).toHaveLength(1);
    expect(await ensureDatabase(url)).toBe(false);
  });

  it('is migrated once when ten stores open it together', async () => {
    const url = freshDatabaseUrl('race-open');
    urls.push(url);
    const stores: { dataSource: DataSource; applied: string[] }[] = await Promise.all(Array.from({ length: 10 }, () => openPostgres(url, 1)));
    try {
      const applied = stores.map((s) => s.applied.length);
      // One store applied every migration; the others found them applied.
      expect(applied.filter((n) => n > 0)).toHaveLength(1);
      const [{ n }] = await stores[0].dataSource.query(`SELECT count(*)::int AS n FROM sluice_migrations`);
      expect(n).toBe(Math.max(...applied));
    } finally {
      await Promise.all(stores.map((s) => s.dataSource.destroy()));
    }
  });
});
