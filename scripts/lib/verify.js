/*
 * Accounting of accepted jobs against the history mirror (the `jobs` and
 * `dead_letter_jobs` tables of the run's own database), with GET /jobs/:id as
 * the second witness for any job the mirror has not caught up with. A job is
 * accounted for when it is `completed` or in the dead-letter queue (`failed`);
 * anything else after the drain is lost.
 */
const { Client } = require('pg');
const { sleep } = require('./http');

const CHUNK = 5000;

/** Opens a pg client on the run's database. */
async function openPg(databaseUrl) {
  const pg = new Client({ connectionString: databaseUrl });
  await pg.connect();
  return pg;
}

/**
 * Current status of each id in the mirror (`jobs.status`); ids the mirror
 * has not seen yet are absent. Also marks ids with a `dead_letter_jobs` row.
 * @returns {Promise<Map<string, {status: string, dlq: boolean}>>}
 */
async function mirroredStatuses(pg, ids) {
  const out = new Map();
  for (let i = 0; i < ids.length; i += CHUNK) {
    const chunk = ids.slice(i, i + CHUNK);
    const { rows } = await pg.query(
      `SELECT j.id::text AS id, j.status, (d.job_id IS NOT NULL) AS dlq
         FROM jobs j LEFT JOIN dead_letter_jobs d ON d.job_id = j.id
        WHERE j.id = ANY($1::uuid[])`,
      [chunk],
    );
    for (const r of rows) out.set(r.id, { status: r.status, dlq: r.dlq });
  }
  return out;
}

/** Counts per status of `ids` in the mirror; `unmirrored` = ids it has not seen yet. */
async function tally(pg, ids) {
  const m = await mirroredStatuses(pg, ids);
  const counts = { unmirrored: ids.length - m.size };
  for (const { status } of m.values()) counts[status] = (counts[status] || 0) + 1;
  return counts;
}

const settled = (c, total) => (c.completed || 0) + (c.failed || 0) + (c.cancelled || 0) === total;

/**
 * Polls the mirror until every id is terminal (completed, failed or
 * cancelled), calling onTick(counts) each round.
 * @returns {Promise<{counts, drained: boolean}>} drained false after timeoutMs.
 */
async function waitSettled(pg, ids, { timeoutMs = 120000, intervalMs = 1000, onTick } = {}) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const counts = await tally(pg, ids);
    if (onTick) onTick(counts);
    if (settled(counts, ids.length)) return { counts, drained: true };
    if (Date.now() > deadline) return { counts, drained: false };
    await sleep(intervalMs);
  }
}

/**
 * The final accounting. Ids whose mirror status is not completed/failed are
 * asked once more through GET /jobs/:id (Redis while live), at most 200 of
 * them (beyond that the run is broken anyway).
 * @returns {Promise<{byStatus: Record<string, number>, completed: number, failed: number, lost: string[], lostDetail: object[]}>}
 */
async function account(pg, api, ids) {
  const m = await mirroredStatuses(pg, ids);
  const byStatus = {};
  const lost = [];
  const lostDetail = [];
  let checked = 0;
  for (const id of ids) {
    let s = m.get(id);
    let status = s ? (s.dlq ? 'failed' : s.status) : 'unmirrored';
    if (status !== 'completed' && status !== 'failed' && api && checked++ < 200) {
      const r = await api.get(`/jobs/${id}`).catch((e) => ({ status: 0, body: e.message }));
      if (r.status === 200 && (r.body.status === 'completed' || r.body.status === 'failed')) status = r.body.status;
      else lostDetail.push({ id, mirror: s ? s.status : null, api: r.status === 200 ? r.body.status : r.status });
    }
    byStatus[status] = (byStatus[status] || 0) + 1;
    if (status !== 'completed' && status !== 'failed') lost.push(id);
  }
  return { byStatus, completed: byStatus.completed || 0, failed: byStatus.failed || 0, lost, lostDetail };
}

module.exports = { openPg, mirroredStatuses, tally, waitSettled, account };
