import type { DataSource } from 'typeorm';
import type { StoreConnection } from '../core/ports';

/** Longest a readiness probe waits on one backing service, ms. */
export const READY_TIMEOUT_MS = 1500;

export type CheckState = 'ok' | 'down' | 'pending' | 'unknown';

/** Outcome of one readiness probe: a state per dependency, plus what is wrong. */
export interface Readiness {
  /** Every service the process's roles need answers (GET /readyz 200). */
  ready: boolean;
  /** Ready, but PostgreSQL (or its migrations) is not, which these roles can run without. */
  degraded: boolean;
  /** `postgres` and `migrations` are absent when the process has no PostgreSQL connection and needs none. */
  checks: { redis: CheckState; postgres?: CheckState; migrations?: CheckState };
  /** One entry per failed check (API.md `details`): path = the check's name. */
  problems: { path: 'redis' | 'postgres' | 'migrations'; message: string }[];
}

/**
 * Which services roles need for their main job (API.md "Ops"): `api` and
 * `worker` run on Redis alone (enqueue and job runs go on while PostgreSQL is
 * down); `audit` and `scheduler` need PostgreSQL with its migrations applied.
 * A process with several roles needs the union.
 */
export function needsPostgres(roles: ReadonlySet<string>): boolean {
  return roles.has('audit') || roles.has('scheduler');
}

/** Rejects with "timed out after N ms" if `p` takes longer than `ms`. */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, rej) => {
    timer = setTimeout(() => rej(new Error(`${what} did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}


/** Names of migrations known to the code but not recorded in `sluice_migrations`. */
async function pendingMigrations(db: DataSource, timeoutMs: number): Promise<string[]> {
  const rows: { name: string }[] = await within(db.query('SELECT name FROM sluice_migrations'), timeoutMs, 'PostgreSQL');
  const applied = new Set(rows.map((r) => r.name));
  return db.migrations.map((m) => m.name ?? m.constructor.name).filter((n) => !applied.has(n));
}

/**
 * Probes Redis (PING) and PostgreSQL (SELECT 1, then the migrations table)
 * in parallel, each bounded by `timeoutMs`, so a hung service makes the probe
 * answer "down" in about `timeoutMs` rather than hang. Never throws.
 * @param db null when this process has no PostgreSQL connection: reported
 *   down when `pgNeeded`, else not probed (and not reported) at all.
 * @param pgNeeded false: a PostgreSQL problem makes the process `degraded`, not unready.
 */
export async function probeReadiness(redis: StoreConnection, db: DataSource | null, pgNeeded = true, timeoutMs = READY_TIMEOUT_MS): Promise<Readiness> {
  const problems: Readiness['problems'] = [];
  const checks: Readiness['checks'] = { redis: 'ok' };
  const redisP = redis.ping(timeoutMs).catch((e: Error) => {
    checks.redis = 'down';
    problems.push({ path: 'redis', message: `Redis is unreachable: ${e.message}` });
  });
  const pgP = !db && !pgNeeded ? Promise.resolve() : checkPostgres(db, checks, problems, timeoutMs);
  await Promise.all([redisP, pgP]);
  // Stable order for clients: redis, postgres, migrations.
  const order = ['redis', 'postgres', 'migrations'];
  problems.sort((a, b) => order.indexOf(a.path) - order.indexOf(b.path));
  const ready = !problems.some((p) => p.path === 'redis' || pgNeeded);
  return { ready, degraded: ready && problems.length > 0, checks, problems };
}

async function checkPostgres(db: DataSource | null, checks: Readiness['checks'], problems: Readiness['problems'], timeoutMs: number): Promise<void> {
  checks.postgres = 'ok';
  checks.migrations = 'ok';
  try {
    if (!db?.isInitialized) throw new Error('no connection');
    await within(db.query('SELECT 1'), timeoutMs, 'SELECT 1');
  } catch (e) {
    checks.postgres = 'down';
    checks.migrations = 'unknown';
    problems.push({ path: 'postgres', message: `PostgreSQL is unreachable: ${(e as Error).message}` });
    return;
  }
  try {
    const pending = await pendingMigrations(db, timeoutMs);
    if (pending.length) {
      checks.migrations = 'pending';
      problems.push({ path: 'migrations', message: `migrations not applied: ${pending.join(', ')}` });
    }
  } catch (e) {
    checks.migrations = 'unknown';
    problems.push({ path: 'migrations', message: `cannot read sluice_migrations: ${(e as Error).message}` });
  }
}
