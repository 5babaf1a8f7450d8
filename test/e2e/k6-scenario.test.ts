import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join, resolve } from 'node:path';
import { startTestApi, TestApi } from '../support/http';

/**
 * load-test.js (the k6 scenario) run through test/support/k6-shim (k6 is not
 * installed here): k6's modules mapped to a synchronous curl-based stand-in,
 * its functions called once each (setup, enqueue × n, dashboard, teardown)
 * against a real server with AUTH=on: keys sent on every request, setup's
 * refusals, and the job mix in step with scripts/lib/load-scenario.js.
 */
const ROOT = resolve(__dirname, '../..');
const SHIM = join(ROOT, 'test/support/k6-shim');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { loadJobBody } = require('../../scripts/lib/load-scenario') as { loadJobBody: (i: number) => { queue: string } };

interface K6Run {
  error?: string;
  checks: Record<string, { pass: number; fail: number }>;
  counters: Record<string, number>;
  requests: Record<string, { status: number; auth: string | null }[]>;
}

/** Runs the scenario's functions with `env` as __ENV; resolves with the runner's JSON line. */
function runK6(iterations: number, env: Record<string, string>): Promise<K6Run> {
  const args = ['--import', join(SHIM, 'register.mjs'), join(SHIM, 'run.mjs'), join(ROOT, 'load-test.js'), String(iterations), ...Object.entries(env).map(([k, v]) => `${k}=${v}`)];
  return new Promise((res, rej) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('exit', (code) => {
      const last = out.trim().split('\n').pop() ?? '';
      if (code !== 0 || !last.startsWith('{')) return rej(new Error(`runner exited ${code}:\n${out.slice(-3000)}`));
      res(JSON.parse(last) as K6Run);
    });
  });
}

describe('load-test.js (k6 scenario, through a shim) against AUTH=on', () => {
  const BOOTSTRAP = 'sk_' + randomBytes(32).toString('base64url');
  let api: TestApi;
  const keys: Record<string, string> = {};

  beforeAll(async () => {
    api = await startTestApi('e2e-k6', { ROLE: 'api', AUTH: 'on', SLUICE_BOOTSTRAP_ADMIN_KEY: BOOTSTRAP });
    for (const role of ['producer', 'viewer', 'operator']) {
      const r = await api.http.post('/keys').set('authorization', `Bearer ${BOOTSTRAP}`).send({ name: `k6-${role}`, role });
      expect(r.status).toBe(201);
      keys[role] = r.body.secret;
    }
  });
  afterAll(async () => {
    await api?.close();
  });

  it('producer API_KEY + viewer VIEWER_KEY: every check passes, each request carries its key, the mix is load-scenario.js', async () => {
    const run = await runK6(100, { BASE_URL: api.url, API_KEY: keys.producer, VIEWER_KEY: keys.viewer });
    expect(run.error).toBeUndefined();
    for (const [name, c] of Object.entries(run.checks)) expect([name, c.fail]).toEqual([name, 0]);
    expect(run.checks['POST /jobs → 201'].pass).toBe(100);
    expect(run.checks['Idempotent-Replayed: true'].pass).toBe(2);
    expect(run.counters).toEqual({ jobs_accepted: 102, jobs_idempotent_replayed: 2 });
    for (const name of ['POST /jobs', 'POST /jobs (idempotent)']) {
      expect(new Set(run.requests[name].map((r) => r.auth))).toEqual(new Set([`Bearer ${keys.producer}`]));
    }
    expect(run.requests['GET /dashboard/stats']).toEqual([{ status: 200, auth: `Bearer ${keys.viewer}` }]);
    expect(run.requests['setup: API_KEY']).toEqual([{ status: 400, auth: `Bearer ${keys.producer}` }]);
    // Same bodies as scripts/lib/load-scenario.js: per queue, 100 iterations plus the idempotent first posts (i % 50 == 0).
    const expected: Record<string, number> = {};
    for (let i = 0; i < 100; i++) for (let k = 0; k < (i % 50 === 0 ? 2 : 1); k++) expected[loadJobBody(i).queue] = (expected[loadJobBody(i).queue] ?? 0) + 1;
    for (const [queue, n] of Object.entries(expected)) {
      const q = await api.http.get(`/queues/${queue}`).set('authorization', `Bearer ${keys.viewer}`);
      expect([queue, q.body.counts.waiting]).toEqual([queue, n]);
    }
  }, 120_000);

  it('one operator key covers both scenarios', async () => {
    const run = await runK6(3, { BASE_URL: api.url, API_KEY: keys.operator });
    expect(run.error).toBeUndefined();
    expect(run.requests['GET /dashboard/stats']).toEqual([{ status: 200, auth: `Bearer ${keys.operator}` }]);
  }, 60_000);

  it('setup stops the run before any load, naming the key: none, a viewer as API_KEY, a producer without VIEWER_KEY', async () => {
    const none = await runK6(5, { BASE_URL: api.url });
    expect(none.error).toMatch(/API_KEY: 401 \(the server has AUTH=on: pass -e API_KEY=sk_/);
    expect(none.requests['POST /jobs']).toBeUndefined();
    const viewer = await runK6(5, { BASE_URL: api.url, API_KEY: keys.viewer });
    expect(viewer.error).toMatch(/API_KEY: 403 .*needs producer/);
    const producer = await runK6(5, { BASE_URL: api.url, API_KEY: keys.producer });
    expect(producer.error).toMatch(/API_KEY \(also the dashboard key\): 403 .*needs viewer/);
    const bad = await runK6(5, { BASE_URL: api.url, API_KEY: 'sk_' + 'x'.repeat(43) });
    expect(bad.error).toMatch(/API_KEY: 401 \(unknown, revoked or expired key\)/);
  }, 60_000);
});
