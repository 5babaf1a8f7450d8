#!/usr/bin/env node
/*
 * The demo: starts Sluice with every role (`node dist/main.js`, ROLE=all,
 * its own Redis prefix and database), then plays a realistic mixed workload
 * through the HTTP API only (scripts/lib/demo-workload.js): emails (some
 * bounce, retry and dead-letter), low-priority newsletters, payment SMS at
 * high priority on `critical`, thumbnails on a queue capped at 4 and paused
 * for a moment, flaky webhooks that fail then succeed, delayed reminders,
 * unrecoverable inputs, an idempotent resubmission. monitor.js shows the live
 * state from GET /dashboard/stats. Then one dead-lettered job is retried with
 * a corrected payload (POST /jobs/:id/retry), every accepted job is accounted
 * for against PostgreSQL, and a summary is printed.
 *
 *   node scripts/demo.js [--ci] [--keep]      (npm run demo does setup + build first)
 *   node scripts/demo.js --clean              (npm run demo -- --clean)
 *
 * --ci: smaller, non-interactive (a plain progress line every 3 s), ends with
 * `SUMMARY {json}`; exit 1 if an accepted job was lost or the DLQ retry did
 * not complete. --keep: leave the server (and its data) running at the end;
 * its Redis keys and database stay after Ctrl-C. --clean: remove what kept
 * demos left (scripts/lib/demo-clean.js), printing each prefix and database.
 */
const { pickPort, isolation, startServer, waitReady, cleanup } = require('./lib/server');
const { client, sleep, pollUntil } = require('./lib/http');
const { openPg, waitSettled, account } = require('./lib/verify');
const { demoWorkload, idempotentOrder } = require('./lib/demo-workload');
const { startMonitor } = require('../monitor');

const CI = process.argv.includes('--ci') || !process.stdout.isTTY;
const KEEP = process.argv.includes('--keep');
const CLEAN_COMMAND = 'npm run demo -- --clean';
// --ci: ~600 jobs over ~8 s; the full demo: ~2,000 over ~25 s.
const SCALE = CI ? 0.3 : 1;
const SUBMIT_MS = CI ? 8000 : 25000;
const DELAYED = CI ? { baseMs: 1500, stepMs: 400, steps: 10 } : { baseMs: 3000, stepMs: 600, steps: 20 };
const CLIENTS = 20;

const events = [];
const note = (msg) => {
  events.push(msg);
  if (CI) console.log(msg);
};
const secs = (t0) => ((Date.now() - t0) / 1000).toFixed(1);

/**
 * Posts `list` as CLIENTS concurrent clients would, paced evenly over
 * SUBMIT_MS. `at(ms)` hooks run once the submission passes ms.
 * @returns {Promise<{ids: string[], rejected: Record<number, number>}>}
 */
async function submit(api, list, progress, hooks) {
  const ids = [];
  const rejected = {};
  const t0 = Date.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (next < list.length) {
        const i = next++;
        const due = t0 + (i / list.length) * SUBMIT_MS;
        if (due > Date.now()) await sleep(due - Date.now());
        for (const h of hooks) if (!h.done && Date.now() - t0 >= h.atMs) (h.done = true), void h.run().catch((e) => note(`hook failed: ${e.message}`));
        const r = await api.post('/jobs', list[i].body).catch((e) => ({ status: 0, body: e.message }));
        if (r.status === 201) ids.push(r.body.id);
        else {
          rejected[r.status] = (rejected[r.status] || 0) + 1;
          if (Object.values(rejected).reduce((a, b) => a + b, 0) <= 3) note(`POST /jobs refused (${list[i].kind}): ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`);
        }
        progress.submitted++;
      }
    }),
  );
  for (const h of hooks) if (!h.done) (h.done = true), await h.run();
  return { ids, rejected };
}

/** Stats in the /dashboard/stats shape from the history mirror, for builds without that endpoint. */
async function statsFromMirror(pg) {
  const { rows } = await pg.query('SELECT queue, status, count(*)::int AS n FROM jobs GROUP BY 1, 2');
  const queues = {};
  const totals = {};
  for (const r of rows) {
    (queues[r.queue] ||= {})[r.status] = r.n;
    totals[r.status] = (totals[r.status] || 0) + r.n;
  }
  const { rows: [t] } = await pg.query(
    `SELECT count(*) FILTER (WHERE status = 'completed')::int AS c, count(*) FILTER (WHERE status = 'failed')::int AS f
       FROM jobs WHERE finished_at > now() - interval '1 minute'`,
  );
  return { queues, totals, workers: { active: 1 }, throughput: { completedPerMin: t.c, failedPerMin: t.f }, auditLagMs: null };
}

/** POST /jobs twice with one idempotency key: 201 then 200 + `Idempotent-Replayed: true`, same id. */
async function idempotentResubmission(api) {
  const first = await api.post('/jobs', idempotentOrder);
  const again = await api.post('/jobs', idempotentOrder);
  const replayed = first.status === 201 && again.status === 200 && again.headers.get('idempotent-replayed') === 'true' && again.body.id === first.body.id;
  note(
    `idempotent resubmission (key ${idempotentOrder.idempotencyKey}): first POST → ${first.status}, second → ${again.status}` +
      ` Idempotent-Replayed: ${again.headers.get('idempotent-replayed')}, same job ${first.body?.id === again.body?.id}`,
  );
  return { id: first.status === 201 ? first.body.id : null, replayed };
}

/**
 * Picks a dead-lettered payment SMS (GET /jobs/dlq/all; the mirror if that
 * endpoint is missing), retries it with a corrected phone number through
 * POST /jobs/:id/retry and waits for it to complete.
 * @returns {Promise<{id, status: string|null, retried: number}>}
 */
async function retryOneFromDlq(api, pg) {
  let dead = null;
  const r = await api.get('/jobs/dlq/all?queue=critical&type=SEND_PAYMENT_SMS&limit=1');
  if (r.status === 200 && r.body.items?.length) dead = r.body.items[0];
  else {
    if (r.status !== 200) console.log(`GET /jobs/dlq/all → ${r.status}; picking the dead job from the audit mirror`);
    const { rows } = await pg.query(`SELECT id::text FROM jobs WHERE status = 'failed' AND queue = 'critical' AND type = 'SEND_PAYMENT_SMS' LIMIT 1`);
    if (rows.length) dead = (await api.get(`/jobs/${rows[0].id}`)).body;
  }
  if (!dead) {
    console.log('DLQ retry: no dead-lettered payment SMS to retry');
    return { id: null, status: null, retried: 0 };
  }
  console.log(`\nDLQ retry: job ${dead.id} (${dead.type}) failed after ${dead.attempts} attempts: "${dead.lastError}"`);
  const payload = { ...dead.payload, phone: '+15550009999' };
  const rr = await api.post(`/jobs/${dead.id}/retry`, { payload });
  console.log(`  POST /jobs/${dead.id}/retry with a corrected phone number → ${rr.status} ${rr.status === 200 ? `status ${rr.body.status}, attempts ${rr.body.attempts}` : JSON.stringify(rr.body)}`);
  if (rr.status !== 200) return { id: dead.id, status: null, retried: 0 };
  const done = await pollUntil(async () => {
    const g = await api.get(`/jobs/${dead.id}`);
    return g.status === 200 && ['completed', 'failed'].includes(g.body.status) ? g.body : null;
  }, { intervalMs: 200, timeoutMs: 30000 });
  console.log(`  → ${done ? `${done.status} (attempt ${done.attempts})` : 'not finished within 30 s'}`);
  return { id: dead.id, status: done?.status ?? null, retried: done?.status === 'completed' ? 1 : 0 };
}

async function main() {
  const port = process.env.PORT ? Number(process.env.PORT) : await pickPort(3000);
  const iso = isolation('demo');
  const logs = [];
  console.log(`Sluice demo${CI ? ' (--ci)' : ''}: starting node dist/main.js with every role (prefix ${iso.prefix}, database ${new URL(iso.databaseUrl).pathname.slice(1)}, port ${port})…`);
  const server = startServer({
    port,
    env: {
      ROLE: 'all', REDIS_PREFIX: iso.prefix, DATABASE_URL: iso.databaseUrl, DIAGNOSTIC_HANDLERS: 'true',
      WORKER_CONCURRENCY: '20', QUEUES: 'critical,default,media,webhooks',
      LOCK_TTL_MS: '10000', HEARTBEAT_INTERVAL_MS: '2000', REAPER_INTERVAL_MS: '1000',
    },
    // While the screen is redrawn, server warnings go to the event list instead of scrolling it.
    onLog: CI ? undefined : (line) => logs.push(line.slice(0, 200)),
  });
  let monitor = null;
  let stopping = false;
  const abort = async (code) => {
    if (stopping) return;
    stopping = true;
    await monitor?.stop();
    await server.stop(10000);
    if (!KEEP) await cleanup({ ...iso, dropDb: iso.ownDb });
    process.exit(code);
  };
  process.on('SIGINT', () => void abort(130));
  process.on('SIGTERM', () => void abort(143));

  try {
    const probe = await waitReady(server);
    const api = client(server.url);
    note(`ready (GET ${probe} → 200) at ${server.url}`);
    // While the server runs (it stops at the end unless --keep): where to look.
    console.log(`while the demo runs: dashboard ${server.url}/dashboard   API docs ${server.url}/docs   live monitor: node monitor.js --url ${server.url}`);
    const pg = await openPg(iso.databaseUrl);

    // Queue settings through the API: cap thumbnails at 4 at once, and hold
    // them (paused) for the first seconds of traffic.
    const cap = await api.put('/queues/media', { maxConcurrency: 4 });
    note(cap.status === 200 ? 'PUT /queues/media {maxConcurrency: 4} → 200' : `PUT /queues/media → ${cap.status} (queue settings not in this build)`);
    const paused = await api.post('/queues/media/pause');
    note(paused.status === 200 ? 'POST /queues/media/pause → 200: thumbnails wait until resumed' : `POST /queues/media/pause → ${paused.status}`);

    const idem = await idempotentResubmission(api);
    const list = demoWorkload(SCALE, DELAYED);
    const scheduledAt = new Date(Date.now() + SUBMIT_MS / 2).toISOString();
    list.push({ kind: 'scheduled (runAt)', body: { type: 'send_email', queue: 'default', runAt: scheduledAt, payload: { to: 'ops@example.com', subject: 'Daily report' } } });
    note(`submitting ${list.length} jobs over ${SUBMIT_MS / 1000} s as ${CLIENTS} concurrent clients (POST /jobs)…`);

    const progress = { submitted: 0 };
    const t0 = Date.now();
    monitor = startMonitor({
      url: server.url,
      intervalMs: CI ? 3000 : 500,
      tty: !CI,
      fallback: () => statsFromMirror(pg),
      header: () => (CI
        ? [`[${secs(t0)}s] submitted ${progress.submitted}/${list.length} |`]
        : [`Sluice demo — ${server.url}   t+${secs(t0)} s   submitted ${progress.submitted}/${list.length} jobs`, `dashboard ${server.url}/dashboard   API docs ${server.url}/docs`, '']),
      footer: () => ['', ...events.slice(-6), ...logs.slice(-3).map((l) => `[sluice] ${l}`)],
    });
    const hooks = [{
      atMs: SUBMIT_MS * 0.25,
      run: async () => {
        const r = await api.post('/queues/media/resume');
        note(`[${secs(t0)}s] POST /queues/media/resume → ${r.status}`);
      },
    }];
    const { ids, rejected } = await submit(api, list, progress, hooks);
    if (idem.id) ids.push(idem.id);
    const submitMs = Date.now() - t0;
    note(`[${secs(t0)}s] all submitted: ${ids.length} accepted (the workload and the idempotent order), ${Object.values(rejected).reduce((a, b) => a + b, 0)} refused; waiting for the queues to drain…`);

    const settledRun = await waitSettled(pg, ids, { timeoutMs: 180000, intervalMs: 1000 });
    const drainMs = Date.now() - t0;
    await monitor.tick();
    await monitor.stop();
    monitor = null;
    if (!settledRun.drained) console.log(`not drained in time: ${JSON.stringify(settledRun.counts)}`);

    const retry = await retryOneFromDlq(api, pg);
    // The retry changes one row: let the mirror catch up before the final count.
    await waitSettled(pg, ids, { timeoutMs: 30000, intervalMs: 300 });
    const acc = await account(pg, api, ids);
    const stats = (await api.get('/dashboard/stats')).body;
    // The run's own database and prefix: its DLQ is this run's failed jobs.
    const dlq = await api.get('/jobs/dlq/all?limit=500');
    const dlqSize = dlq.status === 200 && !dlq.body.nextCursor ? dlq.body.items.length : acc.failed;
    const docs = await api.get('/docs');
    const summary = {
      accepted: ids.length,
      completed: acc.completed,
      failed: acc.failed,
      dlqRetried: retry.retried,
      lost: acc.lost.length,
      idempotentReplay: idem.replayed,
      rejected: Object.values(rejected).reduce((a, b) => a + b, 0),
      byStatus: acc.byStatus,
      dlqSize,
      jobsPerSec: Number((ids.length / (drainMs / 1000)).toFixed(1)),
      submitMs,
      drainMs,
      dashboardUrl: `${server.url}/dashboard`,
      docsUrl: `${server.url}/docs`,
    };

    console.log('\n=== Sluice demo summary ===');
    console.log(`accepted ${summary.accepted} jobs (${summary.rejected} refused) in ${(submitMs / 1000).toFixed(1)} s; all settled after ${(drainMs / 1000).toFixed(1)} s (${summary.jobsPerSec} jobs/s)`);
    console.log(`by status: ${Object.entries(acc.byStatus).map(([k, v]) => `${k} ${v}`).join(', ')}   dead-letter queue: ${dlqSize}`);
    if (stats && stats.queues) {
      for (const [q, c] of Object.entries(stats.queues).sort()) console.log(`  ${q.padEnd(10)} completed ${c.completed ?? 0}, failed ${c.failed ?? 0}, waiting ${c.waiting ?? 0}, delayed ${c.delayed ?? 0}, active ${c.active ?? 0}`);
    }
    console.log(`lost: ${summary.lost}${summary.lost ? `  e.g. ${JSON.stringify(acc.lostDetail.slice(0, 5))}` : ' (every accepted job is completed or in the DLQ, checked against PostgreSQL)'}`);
    console.log(`idempotent resubmission replayed: ${idem.replayed}; DLQ retry completed: ${retry.retried === 1}`);
    if (docs.status !== 200) console.log(`API docs: GET /docs → ${docs.status} in this build`);
    console.log(`SUMMARY ${JSON.stringify(summary)}`);
    await pg.end();

    const ok = summary.lost === 0 && retry.retried === 1 && settledRun.drained;
    if (KEEP) {
      console.log(`\nserver keeps running (--keep): dashboard ${summary.dashboardUrl}   API docs ${summary.docsUrl}   live monitor: node monitor.js --url ${server.url}`);
      console.log(`Ctrl-C stops it; its data stays (prefix ${iso.prefix}, database ${new URL(iso.databaseUrl).pathname.slice(1)})${iso.ownDb ? `: remove it afterwards with \`${CLEAN_COMMAND}\`` : ''}`);
      process.removeAllListeners('SIGINT');
      process.on('SIGINT', () =>
        void server.stop(10000).then(() => {
          if (iso.ownDb) console.log(`\nserver stopped; its data stays until \`${CLEAN_COMMAND}\``);
          process.exit(0);
        }),
      );
      return;
    }
    const code = await server.stop();
    console.log(`server stopped gracefully (exit code ${code}); its prefix and database are removed. \`npm run demo -- --keep\` keeps it running at the end (dashboard, API docs, monitor)`);
    await cleanup({ ...iso, dropDb: iso.ownDb });
    process.exit(ok && code === 0 ? 0 : 1);
  } catch (e) {
    console.error(`demo failed: ${e.stack || e.message}`);
    await abort(1);
  }
}

if (process.argv.includes('--clean')) {
  require('./lib/demo-clean')
    .cleanDemos()
    .then(() => process.exit(0))
    .catch((e) => {
      console.error(`demo --clean failed: ${e.message}`);
      process.exit(1);
    });
} else void main();
