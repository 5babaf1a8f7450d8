import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { resolve } from 'node:path';
import { Client } from 'pg';
import Redis from 'ioredis';
import { PG_BASE_URL } from '../support/postgres';
import { REDIS_URL } from '../support/redis';

const ROOT = resolve(__dirname, '../..');
const DEMO_TIMEOUT_MS = 230_000;

function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => res(port));
    });
  });
}

/** Runs `bash scripts/demo.sh --ci` (build skipped: npm test has built dist/); resolves with its exit code and output. */
function runDemo(port: number): Promise<{ code: number | null; out: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, SLUICE_SKIP_BUILD: '1', PORT: String(port), REDIS_URL };
  // The demo must pick its own prefix and database (and drop them at the end).
  delete env.DATABASE_URL;
  delete env.REDIS_PREFIX;
  return new Promise((res) => {
    const child = spawn('bash', ['scripts/demo.sh', '--ci'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const t = setTimeout(() => child.kill('SIGKILL'), DEMO_TIMEOUT_MS);
    child.on('exit', (code) => {
      clearTimeout(t);
      res({ code, out });
    });
  });
}

describe('npm run demo -- --ci (e2e, dist/main.js, all roles)', () => {
  let run: { code: number | null; out: string };
  let summary: Record<string, any>;

  beforeAll(async () => {
    run = await runDemo(await freePort());
    const line = run.out.split('\n').find((l) => l.startsWith('SUMMARY '));
    summary = line ? JSON.parse(line.slice('SUMMARY '.length)) : {};
  }, DEMO_TIMEOUT_MS + 10_000);

  it('exits 0 and prints one SUMMARY line', () => {
    if (run.code !== 0 || !summary.accepted) process.stderr.write(`demo output:\n${run.out.slice(-6000)}\n`);
    expect(run.out.split('\n').filter((l) => l.startsWith('SUMMARY '))).toHaveLength(1);
    expect(run.code).toBe(0);
  });

  it('loses no accepted job: every one is completed or in the DLQ', () => {
    expect(summary.accepted).toBeGreaterThan(100);
    expect(summary.rejected).toBe(0);
    expect(summary.lost).toBe(0);
    expect(summary.completed).toBeGreaterThan(0);
    expect(summary.failed).toBeGreaterThanOrEqual(1);
    expect(summary.completed + summary.failed).toBe(summary.accepted);
  });

  it('replays the idempotent resubmission and completes the DLQ retry', () => {
    expect(summary.idempotentReplay).toBe(true);
    expect(summary.dlqRetried).toBe(1);
    expect(run.out).toMatch(/POST \/jobs\/[0-9a-f-]{36}\/retry .*→ 200/);
  });

  it('names the dashboard and /docs URLs', () => {
    expect(summary.dashboardUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/dashboard$/);
    expect(summary.docsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/docs$/);
  });

  it('leaves nothing behind: its Redis keys and its database are gone', async () => {
    const m = /prefix (\S+), database (\w+)/.exec(run.out);
    expect(m).not.toBeNull();
    const [, prefix, db] = m!;
    const redis = new Redis(REDIS_URL);
    const keys: string[] = [];
    let cursor = '0';
    do {
      const [next, page] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 10000);
      cursor = next;
      keys.push(...page);
    } while (cursor !== '0');
    redis.disconnect();
    expect(keys).toEqual([]);
    const pg = new Client({ connectionString: PG_BASE_URL });
    await pg.connect();
    const { rows } = await pg.query('SELECT 1 FROM pg_database WHERE datname = $1', [db]);
    await pg.end();
    expect(rows).toEqual([]);
  });
});
