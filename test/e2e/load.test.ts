import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { REDIS_URL } from '../support/redis';

const ROOT = resolve(__dirname, '../..');
const TIMEOUT_MS = 180_000;

/** Runs `node scripts/load.js args` (dist/ built by npm test) with `extraEnv`; resolves with its exit code and output. */
function runLoad(args: string[], extraEnv: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; out: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, REDIS_URL, ...extraEnv };
  delete env.DATABASE_URL; // its own database, dropped at the end
  delete env.REDIS_PREFIX;
  delete env.PORT;
  return new Promise((res) => {
    const child = spawn(process.execPath, ['scripts/load.js', ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const t = setTimeout(() => child.kill('SIGKILL'), TIMEOUT_MS);
    child.on('exit', (code) => {
      clearTimeout(t);
      res({ code, out });
    });
  });
}

describe('npm run load (e2e, autocannon against api + worker/audit processes)', () => {
  it(
    'every accepted job ends completed or in the DLQ, checked in PostgreSQL; LOAD line with req/s and p99',
    async () => {
      // An exported AUTH=on does not reach the servers it starts (loopback only): they run with AUTH=off.
      const run = await runLoad(['--n', '600', '--connections', '10', '--concurrency', '20'], { AUTH: 'on' });
      const line = run.out.split('\n').find((l) => l.startsWith('LOAD '));
      if (run.code !== 0 || !line) process.stderr.write(`load output:\n${run.out.slice(-6000)}\n`);
      expect(run.code).toBe(0);
      const r = JSON.parse(line!.slice('LOAD '.length));
      expect(r).toMatchObject({ requested: 600, accepted: 600, refused: 0, lost: 0, drained: true });
      // 1 in 100 bodies is an unrecoverable email: exactly those dead-letter.
      expect(r.failed).toBe(6);
      expect(r.completed).toBe(594);
      expect(r.reqPerSec).toBeGreaterThan(0);
      expect(r.latencyMs.p99).toBeGreaterThan(0);
    },
    TIMEOUT_MS + 10_000,
  );

  it(
    '--auth: servers with AUTH=on and a bootstrap key, sent on every request, never printed',
    async () => {
      const run = await runLoad(['--n', '300', '--connections', '5', '--concurrency', '20', '--auth'], { AUTH: 'off' });
      const line = run.out.split('\n').find((l) => l.startsWith('LOAD '));
      if (run.code !== 0 || !line) process.stderr.write(`load output:\n${run.out.slice(-6000)}\n`);
      expect(run.code).toBe(0);
      expect(run.out).toContain('AUTH=on');
      expect(run.out).not.toMatch(/sk_[A-Za-z0-9_-]{32}/);
      expect(JSON.parse(line!.slice('LOAD '.length))).toMatchObject({ requested: 300, accepted: 300, refused: 0, lost: 0, failed: 3, completed: 297 });
    },
    TIMEOUT_MS + 10_000,
  );
});
