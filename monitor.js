#!/usr/bin/env node
/*
 * Live terminal monitor for a Sluice server: polls GET /dashboard/stats and
 * shows per-queue bars (waiting / active / delayed / failed / completed),
 * completed and failed per minute, jobs/s since the last poll, DLQ size,
 * active workers and the audit lag. Plain Node (≥ 20, global fetch), no
 * dependencies: copy it anywhere.
 *
 *   node monitor.js [--url http://127.0.0.1:3000] [--interval 1000] [--once]
 *
 * In a TTY the screen is redrawn in place (ANSI); otherwise (pipes, CI, --once
 * when piped) one plain line is printed per poll. Ctrl-C stops it.
 * scripts/demo.js uses startMonitor() from this file.
 */

const STATES = ['completed', 'failed', 'active', 'waiting', 'delayed'];
// One glyph per state so the bars read without colour too; colours in a TTY.
const GLYPH = { completed: '█', failed: 'x', active: '▒', waiting: '░', delayed: '·' };
const COLS = ['waiting', 'active', 'delayed', 'failed', 'completed'];
const COLOUR = { completed: 32, failed: 31, active: 33, waiting: 36, delayed: 35 };

/**
 * GET {url}/dashboard/stats (API.md "Dashboard").
 * @returns {Promise<{ok: true, stats: object} | {ok: false, error: string, status?: number}>}
 *   never throws: an unreachable server is a state to show, not a crash.
 */
async function fetchStats(url, timeoutMs = 5000) {
  try {
    const res = await fetch(`${url.replace(/\/$/, '')}/dashboard/stats`, { signal: AbortSignal.timeout(timeoutMs) });
    const text = await res.text();
    if (res.status !== 200) return { ok: false, status: res.status, error: `GET /dashboard/stats → ${res.status} ${text.slice(0, 160)}` };
    return { ok: true, stats: JSON.parse(text) };
  } catch (e) {
    return { ok: false, error: `${url} unreachable: ${e.cause?.code || e.cause?.message || e.message}` };
  }
}

/** `queues` as [name, counts] pairs, whether the server sent a map or a list. */
function queueEntries(stats) {
  const q = stats.queues || {};
  const list = Array.isArray(q) ? q.map((x) => [x.name, { ...(x.counts || {}), ...x }]) : Object.entries(q);
  return list.sort(([a], [b]) => a.localeCompare(b));
}

const num = (x) => (typeof x === 'number' && Number.isFinite(x) ? x : 0);
const fmt = (x) => (x >= 1e6 ? `${(x / 1e6).toFixed(1)}M` : x >= 1e4 ? `${(x / 1e3).toFixed(1)}k` : String(Math.round(x)));

/** A stacked bar of `width` cells, each state's share of the queue's jobs (a non-zero state gets ≥ 1 cell). */
function bar(counts, width, colour) {
  const vals = STATES.map((k) => num(counts[k]));
  const total = vals.reduce((a, b) => a + b, 0);
  if (!total) return ' '.repeat(width);
  const cells = vals.map((v) => (v ? Math.max(1, Math.floor((v / total) * width)) : 0));
  // Give the rounding slack to (or take it from) the largest state.
  for (let diff = width - cells.reduce((a, b) => a + b, 0); diff !== 0; diff += diff > 0 ? -1 : 1) {
    const i = cells.indexOf(Math.max(...cells));
    if (diff < 0 && cells[i] <= 1) break;
    cells[i] += diff > 0 ? 1 : -1;
  }
  return STATES.map((k, i) => {
    const seg = GLYPH[k].repeat(cells[i]);
    return colour && cells[i] ? `\x1b[${COLOUR[k]}m${seg}\x1b[0m` : seg;
  }).join('');
}

/** Derived figures: DLQ size, rates. `prev` is the previous sample {at, completed, failed}. */
function figures(stats, prev, now) {
  const totals = stats.totals || {};
  const completed = num(totals.completed);
  const failed = num(totals.failed);
  const dt = prev ? (now - prev.at) / 1000 : 0;
  const jobsPerSec = prev && dt > 0 ? Math.max(0, completed + failed - prev.completed - prev.failed) / dt : null;
  return {
    completed,
    failed,
    dlq: failed,
    jobsPerSec,
    perMin: { completed: num(stats.throughput?.completedPerMin), failed: num(stats.throughput?.failedPerMin) },
    workers: num(stats.workers?.active),
    auditLagMs: stats.auditLagMs ?? null,
  };
}

/**
 * The full-screen view (lines, no trailing newline) for a TTY.
 * @param ctx {url, width, colour, header: string[], footer: string[], prev}
 */
function renderScreen(stats, ctx) {
  const f = figures(stats, ctx.prev, ctx.now);
  const width = Math.max(60, Math.min(ctx.width || 100, 140));
  const barW = Math.max(10, width - 74);
  const lag = f.auditLagMs === null ? 'n/a' : `${fmt(f.auditLagMs)} ms`;
  const lines = [
    ...(ctx.header || []),
    `Sluice ${ctx.url}  ${new Date(ctx.now).toISOString().slice(11, 19)}Z   workers ${f.workers}   DLQ ${fmt(f.dlq)}   audit lag ${lag}`,
    `completed ${fmt(f.perMin.completed)}/min   failed ${fmt(f.perMin.failed)}/min   now ${f.jobsPerSec === null ? '…' : f.jobsPerSec.toFixed(1)} jobs/s`,
    '',
    `${'queue'.padEnd(14)} ${'jobs'.padEnd(barW)}${COLS.map((h) => h.padStart(10)).join('')}`,
  ];
  for (const [name, c] of queueEntries(stats)) {
    const counts = COLS.map((k) => fmt(num(c[k])).padStart(10)).join('');
    lines.push(`${name.slice(0, 14).padEnd(14)} ${bar(c, barW, ctx.colour)}${counts}${c.paused ? '  paused' : ''}`);
  }
  if (!queueEntries(stats).length) lines.push('(no queues yet)');
  lines.push('', `legend: ${STATES.map((k) => `${ctx.colour ? `\x1b[${COLOUR[k]}m${GLYPH[k]}\x1b[0m` : GLYPH[k]} ${k}`).join('  ')}`);
  lines.push(...(ctx.footer || []));
  return lines;
}

/** One plain line per poll, for pipes and CI logs. */
function renderLine(stats, ctx) {
  const f = figures(stats, ctx.prev, ctx.now);
  const queues = queueEntries(stats)
    .map(([n, c]) => `${n}${c.paused ? '(paused)' : ''} w=${num(c.waiting)} a=${num(c.active)} d=${num(c.delayed)} f=${num(c.failed)} c=${num(c.completed)}`)
    .join(' | ');
  const rate = f.jobsPerSec === null ? '' : ` ${f.jobsPerSec.toFixed(1)} jobs/s,`;
  const lag = f.auditLagMs === null ? 'n/a' : `${Math.round(f.auditLagMs)} ms`;
  return `${ctx.label || ''}${queues || '(no queues)'} || ${fmt(f.perMin.completed)} completed/min, ${fmt(f.perMin.failed)} failed/min,${rate} DLQ ${f.dlq}, workers ${f.workers}, audit lag ${lag}`;
}

/**
 * Polls and prints until stop().
 * @param opts.url        server base URL
 * @param opts.intervalMs poll period, ms (default 1000)
 * @param opts.tty        redraw in place (default: stdout is a TTY)
 * @param opts.header     () => string[] shown above the stats (TTY) / label prefix (plain: header()[0])
 * @param opts.footer     () => string[] shown below the stats (TTY only)
 * @param opts.fallback   async () => stats object used when /dashboard/stats answers 404
 * @param opts.out        writable (default process.stdout)
 * @returns {{stop(): Promise<void>, tick(): Promise<void>, last(): object|null}}
 */
function startMonitor(opts) {
  const out = opts.out || process.stdout;
  const tty = opts.tty ?? Boolean(out.isTTY);
  const intervalMs = opts.intervalMs || 1000;
  let prev = null;
  let last = null;
  let drawn = false;
  let stopped = false;
  let timer = null;
  let running = Promise.resolve();
  const tick = async () => {
    let r = await fetchStats(opts.url);
    if (!r.ok && r.status === 404 && opts.fallback) {
      try {
        r = { ok: true, stats: await opts.fallback(), note: '/dashboard/stats not available: counts from the audit mirror' };
      } catch (e) {
        r = { ok: false, error: `${r.error}; fallback failed: ${e.message}` };
      }
    }
    const now = Date.now();
    const header = opts.header ? opts.header() : [];
    if (tty) {
      const ctx = { url: opts.url, width: out.columns, colour: true, header, footer: opts.footer ? opts.footer() : [], prev, now };
      const lines = r.ok ? renderScreen(r.stats, ctx) : [...header, r.error];
      if (r.note) lines.push(r.note);
      out.write(`${drawn ? '' : '\x1b[?25l\x1b[2J'}\x1b[H${lines.map((l) => `${l}\x1b[K`).join('\n')}\n\x1b[J`);
      drawn = true;
    } else {
      const label = header.length ? `${header[0]} ` : `[${new Date(now).toISOString().slice(11, 19)}] `;
      out.write(`${r.ok ? renderLine(r.stats, { label, prev, now }) : label + r.error}\n`);
    }
    if (r.ok) {
      last = r.stats;
      const f = figures(r.stats, null, now);
      prev = { at: now, completed: f.completed, failed: f.failed };
    }
  };
  const loop = () => {
    if (stopped) return;
    running = tick().finally(() => {
      if (!stopped) timer = setTimeout(loop, intervalMs);
    });
  };
  loop();
  return {
    tick,
    last: () => last,
    stop: async () => {
      stopped = true;
      clearTimeout(timer);
      await running;
      if (tty && drawn) out.write('\x1b[?25h');
    },
  };
}

function parseArgs(argv) {
  const a = { url: process.env.SLUICE_URL || 'http://127.0.0.1:3000', interval: 1000, once: false };
  for (let i = 0; i < argv.length; i++) {
    const [k, inline] = argv[i].split('=', 2);
    const val = () => inline ?? argv[++i];
    if (k === '--url') a.url = val().replace(/\/$/, '');
    else if (k === '--interval') a.interval = Number(val());
    else if (k === '--once') a.once = true;
    else if (k === '-h' || k === '--help') a.help = true;
    else throw new Error(`unknown argument ${argv[i]}`);
  }
  if (!Number.isInteger(a.interval) || a.interval < 100) throw new Error('--interval must be an integer ≥ 100 (ms)');
  return a;
}

async function cli() {
  let a;
  try {
    a = parseArgs(process.argv.slice(2));
  } catch (e) {
    process.stderr.write(`monitor: ${e.message}\nusage: node monitor.js [--url http://127.0.0.1:3000] [--interval 1000] [--once]\n`);
    process.exit(2);
  }
  if (a.help) {
    process.stdout.write('usage: node monitor.js [--url http://127.0.0.1:3000] [--interval 1000] [--once]\n');
    return;
  }
  if (a.once) {
    const r = await fetchStats(a.url);
    if (!r.ok) {
      process.stderr.write(`${r.error}\n`);
      process.exit(1);
    }
    const ctx = { url: a.url, width: process.stdout.columns, colour: Boolean(process.stdout.isTTY), prev: null, now: Date.now(), label: '' };
    process.stdout.write(`${process.stdout.isTTY ? renderScreen(r.stats, ctx).join('\n') : renderLine(r.stats, ctx)}\n`);
    return;
  }
  const m = startMonitor({ url: a.url, intervalMs: a.interval });
  const quit = () => m.stop().then(() => process.exit(0));
  process.on('SIGINT', quit);
  process.on('SIGTERM', quit);
}

module.exports = { fetchStats, renderScreen, renderLine, startMonitor, bar };

if (require.main === module) void cli();
