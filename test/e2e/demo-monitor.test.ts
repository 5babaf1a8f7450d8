import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { startTestApi, TestApi } from '../support/http';

const MONITOR = resolve(__dirname, '../../monitor.js');

/** Runs `node monitor.js args` (stdout is a pipe: plain lines); stops it with SIGTERM after stopAfterLines lines. */
function monitor(args: string[], stopAfterLines = 0): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((res) => {
    const child = spawn(process.execPath, [MONITOR, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => {
      out += d;
      if (stopAfterLines && out.split('\n').filter(Boolean).length >= stopAfterLines) child.kill('SIGTERM');
    });
    child.stderr.on('data', (d) => (err += d));
    const t = setTimeout(() => child.kill('SIGKILL'), 30000);
    child.on('exit', (code) => {
      clearTimeout(t);
      res({ code, out, err });
    });
  });
}

describe('monitor.js (e2e against GET /dashboard/stats)', () => {
  let api: TestApi;
  beforeAll(async () => {
    // api only: no worker, so the jobs stay waiting/delayed and the counts are exact.
    api = await startTestApi('e2e-monitor', { ROLE: 'api' });
    for (let i = 0; i < 3; i++) expect((await api.http.post('/jobs').send({ type: 'diag.echo', queue: 'alpha' })).status).toBe(201);
    expect((await api.http.post('/jobs').send({ type: 'diag.echo', queue: 'alpha', delayMs: 600000 })).status).toBe(201);
  });
  afterAll(async () => {
    await api?.close();
  });

  it('--once prints one plain line with the queue counts, DLQ size and workers, exit 0', async () => {
    const r = await monitor(['--once', '--url', api.url]);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    const lines = r.out.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('alpha w=3 a=0 d=1 f=0 c=0');
    expect(lines[0]).toMatch(/DLQ 0, workers \d+, audit lag/);
  });

  it('polls every --interval ms and stops cleanly on SIGTERM', async () => {
    const r = await monitor(['--url', api.url, '--interval', '200'], 3);
    expect(r.code).toBe(0);
    const lines = r.out.trim().split('\n');
    expect(lines.length).toBeGreaterThanOrEqual(3);
    for (const l of lines) expect(l).toContain('alpha w=3');
    // From the second poll on, a rate is shown (jobs/s since the previous poll).
    expect(lines[1]).toMatch(/\d+\.\d jobs\/s/);
  });

  it('an unreachable server → exit 1 naming it; a bad argument → exit 2 with usage', async () => {
    const down = await monitor(['--once', '--url', 'http://127.0.0.1:9']);
    expect(down.code).toBe(1);
    expect(down.err).toContain('http://127.0.0.1:9 unreachable');
    const bad = await monitor(['--interval', 'fast']);
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('usage: node monitor.js');
  });
});
