/**
 * MirrorWriterThread's supervision (src/mirror/writer-thread.ts) with stand-in
 * thread files: a thread that dies is started again, stop() ends it for good,
 * and a thread that ignores 'stop' is terminated after the timeout. The real
 * thread, mirroring and draining on SIGTERM, runs in shutdown-mirror.test.ts
 * (dist/main.js with ROLE=all).
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MirrorMetrics } from '../../../src/mirror/mirror-metrics';
import { MirrorWriterThread, WriterThreadConfig } from '../../../src/mirror/writer-thread';
import { sleep } from '../../support/redis';

const dir = mkdtempSync(join(tmpdir(), 'sluice-thread-'));
const config = {} as WriterThreadConfig;

function script(name: string, body: string): string {
  const f = join(dir, name);
  writeFileSync(f, body);
  return f;
}

function recorder() {
  const lines: { level: string; msg: string; o: Record<string, unknown> }[] = [];
  const at = (level: string) => (o: Record<string, unknown>, msg: string) => void lines.push({ level, msg, o });
  return { lines, log: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } as any };
}

test('a thread that exits is logged and started again (about once a second) until stop()', async () => {
  const { lines, log } = recorder();
  const th = new MirrorWriterThread(script('dies.js', 'process.exit(3);'), config, 'w-dies', log);
  th.start();
  await sleep(2_600);
  await th.stop();
  const exits = lines.filter((l) => l.msg === 'audit writer thread exited: starting it again');
  expect(exits.length).toBeGreaterThanOrEqual(2);
  expect(exits.length).toBeLessThanOrEqual(4);
  expect(exits[0].o).toEqual({ code: 3 });
  const after = exits.length;
  await sleep(1_300);
  expect(lines.filter((l) => l.msg === 'audit writer thread exited: starting it again')).toHaveLength(after);
});

test("stop() sends 'stop' and waits for the thread to exit", async () => {
  const marker = join(dir, 'stopped.txt');
  const f = script(
    'polite.js',
    `const { parentPort } = require('node:worker_threads');
     const fs = require('node:fs');
     setInterval(() => {}, 1000);
     parentPort.on('message', (m) => { if (m === 'stop') setTimeout(() => { fs.writeFileSync(${JSON.stringify(marker)}, 'yes'); process.exit(0); }, 100); });`,
  );
  const { lines, log } = recorder();
  const th = new MirrorWriterThread(f, config, 'w-polite', log);
  th.start();
  await sleep(200);
  await th.stop();
  await th.whenReady(); // resolved by the exit: it never said 'started'
  expect(readFileSync(marker, 'utf8')).toBe('yes');
  expect(lines.filter((l) => l.level === 'error')).toEqual([]);
});

test('a thread that ignores stop is terminated after the timeout', async () => {
  const { log } = recorder();
  const th = new MirrorWriterThread(script('deaf.js', 'setInterval(() => {}, 1000);'), config, 'w-deaf', log);
  th.start();
  await sleep(200);
  const t0 = Date.now();
  await th.stop(300);
  expect(Date.now() - t0).toBeGreaterThanOrEqual(250);
  expect(Date.now() - t0).toBeLessThan(5_000);
});

test("the thread's metrics messages reach the parent's MirrorMetrics (one message per interval, not per entry)", async () => {
  const f = script(
    'metrics.js',
    `const { parentPort } = require('node:worker_threads');
     parentPort.postMessage('started');
     parentPort.postMessage({ kind: 'sluice-audit-metrics', sizes: [1000, 1000, 3], quarantined: 1, isolated: 1, failures: 0 });
     parentPort.on('message', (m) => { if (m === 'stop') process.exit(0); });
     setInterval(() => {}, 1000);`,
  );
  const { log } = recorder();
  const metrics = new MirrorMetrics();
  const th = new MirrorWriterThread(f, config, 'w-metrics', log, metrics);
  th.start();
  await th.whenReady();
  for (let i = 0; i < 50 && !/sluice_audit_batches_total 3/.test(await metrics.registry.metrics()); i++) await sleep(20);
  await th.stop();
  const text = await metrics.registry.metrics();
  expect(text).toMatch(/^sluice_audit_batches_total 3$/m);
  expect(text).toMatch(/^sluice_audit_entries_total 2003$/m);
  expect(text).toMatch(/^sluice_audit_quarantined_entries_total 1$/m);
});
