import { createHash } from 'node:crypto';

/**
 * The web dashboard: one self-contained HTML page (no build step, no assets,
 * nothing read from disk, so `tsc`/`nest build` output serves it as is).
 * Vanilla JS polls /dashboard/stats, /dashboard/recent and /workers every 2 s.
 * Every value from the server is rendered with textContent (never innerHTML),
 * so job data cannot inject markup; the CSP below allows only this page's own
 * script and style (by hash) and requests to this origin.
 */

const STYLE = `
body{font:14px/1.4 system-ui,sans-serif;margin:0;background:#f6f7f9;color:#1d2430}
header{background:#1d2430;color:#fff;padding:10px 20px;display:flex;gap:24px;align-items:baseline;flex-wrap:wrap}
header h1{font-size:18px;margin:0}
header .kpi b{font-size:16px}
main{padding:16px 20px;display:grid;gap:16px}
section{background:#fff;border:1px solid #dde1e7;border-radius:6px;padding:10px 14px;overflow-x:auto}
h2{font-size:15px;margin:4px 0 8px}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:4px 8px;border-bottom:1px solid #eef0f3;white-space:nowrap}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.paused{color:#b35c00;font-weight:600}
.dead,.failed{color:#b00020}
.completed,.running{color:#13795b}
.active,.draining{color:#1f5fbf}
button{font:inherit;padding:2px 10px;cursor:pointer}
#err{color:#b00020}
small{color:#667}
`;

const SCRIPT = `
(function () {
  'use strict';
  var COUNTS = ['waiting', 'delayed', 'active', 'completed', 'failed', 'cancelled'];
  function $(id) { return document.getElementById(id); }
  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }
  function row(cells) {
    var tr = document.createElement('tr');
    cells.forEach(function (c) { tr.appendChild(c); });
    return tr;
  }
  function num(v) { return el('td', v, 'num'); }
  function fill(tbody, rows) {
    while (tbody.firstChild) tbody.removeChild(tbody.firstChild);
    rows.forEach(function (r) { tbody.appendChild(r); });
  }
  function time(s) { return s ? new Date(s).toLocaleTimeString() : ''; }
  function getJson(path) {
    return fetch(path, { headers: { accept: 'application/json' } }).then(function (r) {
      if (!r.ok) return r.json().catch(function () { return {}; }).then(function (b) {
        throw new Error(path + ': ' + r.status + ' ' + ((b.error && b.error.message) || ''));
      });
      return r.json();
    });
  }
  function act(queue, action) {
    fetch('/queues/' + encodeURIComponent(queue) + '/' + action, { method: 'POST' })
      .then(function () { refresh(); })
      .catch(function (e) { $('err').textContent = String(e.message || e); });
  }
  function renderStats(s) {
    $('totalWaiting').textContent = s.totals.waiting;
    $('totalActive').textContent = s.totals.active;
    $('dlq').textContent = s.totals.failed;
    $('workersActive').textContent = s.workers.active;
    $('throughput').textContent = s.throughput.completedPerMin + ' / ' + s.throughput.failedPerMin;
    $('lag').textContent = s.auditLagMs + ' ms';
    var rows = Object.keys(s.queues).sort().map(function (name) {
      var q = s.queues[name];
      var cells = [el('td', name)];
      COUNTS.forEach(function (k) { cells.push(num(q[k])); });
      cells.push(el('td', q.paused ? 'paused' : 'running', q.paused ? 'paused' : ''));
      var b = el('button', q.paused ? 'Resume' : 'Pause');
      b.addEventListener('click', function () { act(name, q.paused ? 'resume' : 'pause'); });
      var td = el('td'); td.appendChild(b); cells.push(td);
      return row(cells);
    });
    fill($('queues'), rows);
  }
  function renderWorkers(ws) {
    fill($('workers'), ws.map(function (w) {
      return row([el('td', w.id), el('td', w.hostname), num(w.pid), el('td', (w.queues || []).join(', ')),
        num(w.active + ' / ' + w.concurrency), el('td', w.status, w.status), el('td', time(w.lastHeartbeatAt))]);
    }));
  }
  function renderRecent(jobs) {
    fill($('recent'), jobs.map(function (j) {
      return row([el('td', time(j.updatedAt)), el('td', j.id), el('td', j.queue), el('td', j.type),
        el('td', j.status, j.status), num(j.attempts + ' / ' + j.maxAttempts), el('td', j.lastError || '')]);
    }));
  }
  function refresh() {
    return Promise.all([getJson('/dashboard/stats'), getJson('/workers'), getJson('/dashboard/recent')])
      .then(function (r) {
        renderStats(r[0]); renderWorkers(r[1]); renderRecent(r[2]);
        $('err').textContent = '';
        $('updated').textContent = 'updated ' + new Date().toLocaleTimeString();
      })
      .catch(function (e) { $('err').textContent = String(e.message || e); });
  }
  function loop() { refresh().then(function () { setTimeout(loop, 2000); }); }
  loop();
})();
`;

const sha256 = (s: string): string => `'sha256-${createHash('sha256').update(s, 'utf8').digest('base64')}'`;

/** Content-Security-Policy of the page: its own inline script and style only, requests to this origin only. */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  `script-src ${sha256(SCRIPT)}`,
  `style-src ${sha256(STYLE)}`,
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** The dashboard page served at `GET /` and `GET /dashboard`. */
export const DASHBOARD_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sluice dashboard</title>
<style>${STYLE}</style>
</head>
<body>
<header>
  <h1>Sluice</h1>
  <span class="kpi">waiting <b id="totalWaiting">–</b></span>
  <span class="kpi">active <b id="totalActive">–</b></span>
  <span class="kpi">DLQ <b id="dlq">–</b></span>
  <span class="kpi">workers <b id="workersActive">–</b></span>
  <span class="kpi">completed / failed per min <b id="throughput">–</b></span>
  <span class="kpi">audit lag <b id="lag">–</b></span>
  <small id="updated"></small>
</header>
<main>
  <div id="err" role="alert"></div>
  <section>
    <h2>Queues</h2>
    <table>
      <thead><tr><th>queue</th><th class="num">waiting</th><th class="num">delayed</th><th class="num">active</th><th class="num">completed</th><th class="num">failed (DLQ)</th><th class="num">cancelled</th><th>state</th><th></th></tr></thead>
      <tbody id="queues"></tbody>
    </table>
  </section>
  <section>
    <h2>Workers</h2>
    <table>
      <thead><tr><th>id</th><th>host</th><th class="num">pid</th><th>queues</th><th class="num">active</th><th>status</th><th>last heartbeat</th></tr></thead>
      <tbody id="workers"></tbody>
    </table>
  </section>
  <section>
    <h2>Recent jobs</h2>
    <table>
      <thead><tr><th>updated</th><th>id</th><th>queue</th><th>type</th><th>status</th><th class="num">attempts</th><th>last error</th></tr></thead>
      <tbody id="recent"></tbody>
    </table>
  </section>
  <small>Live counts from Redis, terminal totals from PostgreSQL; refreshed every 2 s. API: <a href="/docs">/docs</a></small>
</main>
<script>${SCRIPT}</script>
</body>
</html>
`;
