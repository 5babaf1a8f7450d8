import { Injectable, OnModuleDestroy } from '@nestjs/common';
import type { ServerResponse } from 'node:http';
import { HistoryQueries } from '../../history';
import type { JobChange } from '../../mirror/job-changes';
import { UnavailableError } from '../../core/errors';
import { bareQueue, inProject } from '../../core/project-queue';
import { iso, toApiJob } from '../../http/api-job';
import { toApiEvent, toApiLog } from '../../jobs/history-view';
import { LiveEvents, type Subscription } from '../../core/ports';
import { DashboardService } from '../dashboard.service';
import { SseClient } from './sse-client';

/** Live-update connections one API process holds at most; more get 503 (the console falls back to polling). */
export const MAX_SSE_CONNECTIONS = 100;
/** A comment line to every client this often, ms: idle proxies and load balancers keep the connection. */
export const HEARTBEAT_MS = 15_000;
/** `counts` is computed at most this often, ms (and sent only when it changed). */
export const COUNTS_MS = 1000;
/** Job changes are sent to overview clients in batches this often, ms. */
const FLUSH_MS = 250;
/** Job changes one overview client is sent per flush at most; past it, one `resync` (refetch) instead of the rest. */
const MAX_JOBS_PER_FLUSH = 500;
/** The listener key outlives its last refresh this long, ms (refreshed every third of it). */
const PRESENCE_TTL_MS = 10_000;

/**
 * Live updates for the console (`GET /dashboard/events`, Server-Sent
 * Events; DESIGN.md "The operator console"). One per API process.
 *
 * Source: the mirror writers publish, after each committed batch, the jobs
 * it changed (src/mirror/job-changes.ts) on one pub/sub channel ({@link LiveEvents}), while a
 * presence key says some API process has listeners. This
 * hub subscribes once (one Redis connection, whatever the number of
 * clients) and fans out. Tailing every queue's events stream per process
 * instead would miss entries: the writer deletes them once mirrored, often
 * within milliseconds. Publishing after the commit also means a client
 * that refetches on a notice reads the change from PostgreSQL.
 *
 * Bounds: {@link MAX_SSE_CONNECTIONS} connections (503 beyond); per
 * overview client at most {@link MAX_JOBS_PER_FLUSH} job events per
 * {@link FLUSH_MS} (the rest replaced by one `resync`); a client with more
 * than 1 MiB unsent is dropped (src/dashboard/live/sse-client.ts);
 * `counts` computed once per second per process, not per client; a `?job=`
 * client's history is re-read at most once at a time (notices arriving
 * meanwhile coalesce into one more read).
 *
 * Projects: a client sees its credentials' project only — job changes of
 * that project's queues (by bare name), that project's `counts`, a `?job=`
 * of that project (else 404 before the stream opens).
 *
 * Events: `counts` (the GET /dashboard/stats body), `job` ({id, queue,
 * status, updatedAt}; for `?job=` the whole job object), `event` and `log`
 * (`?job=` only: the job's new history events and log lines), `resync`.
 */
@Injectable()
export class LiveHub implements OnModuleDestroy {
  private readonly clients = new Set<SseClient>();
  /** Overview clients' job changes not sent yet, by job id (the newest wins). */
  private readonly pending = new Map<SseClient, { jobs: Map<string, JobChange>; dropped: number }>();
  /** `?job=` clients: how far their history has been sent, and whether a re-read is running / wanted. */
  private readonly watchers = new Map<SseClient, { seq: number; logs: number; running: boolean; again: boolean }>();
  private sub: Subscription | null = null;
  private timers: NodeJS.Timeout[] = [];
  /** The last `counts` sent, per project (JSON). */
  private readonly lastCounts = new Map<string, string>();
  private countsRunning = false;
  /** Tests shorten it. */
  heartbeatMs = HEARTBEAT_MS;

  constructor(
    private readonly events: LiveEvents,
    private readonly dashboard: DashboardService,
    private readonly history: HistoryQueries,
  ) {}

  /** Connections open now. */
  get size(): number {
    return this.clients.size;
  }

  /**
   * Takes over the response as an event stream (200 `text/event-stream`,
   * the headers already set on `reply` kept) and sends the first state:
   * `counts` for the overview, or the job, its events and its log lines.
   * @throws UnavailableError (503) when {@link MAX_SSE_CONNECTIONS} are open.
   */
  open(raw: ServerResponse, headers: Record<string, string | string[] | number | undefined>, project: string, jobId: string | null, hidePayloads = false): SseClient {
    this.assertCapacity();
    const out: Record<string, string | string[] | number> = {};
    for (const [k, v] of Object.entries(headers)) if (v !== undefined && k !== 'content-length') out[k] = v;
    raw.writeHead(200, { ...out, 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-accel-buffering': 'no' });
    // No idle timeout on this socket: the stream is long-lived by design (heartbeats every 15 s).
    raw.socket?.setTimeout(0);
    raw.write('retry: 3000\n\n');
    const client = new SseClient(raw, project, jobId, undefined, hidePayloads);
    this.clients.add(client);
    if (jobId) this.watchers.set(client, { seq: -1, logs: 0, running: false, again: false });
    else this.pending.set(client, { jobs: new Map(), dropped: 0 });
    client.onClose(() => this.drop(client));
    if (this.clients.size === 1) this.start();
    if (jobId) void this.refreshJob(client);
    else {
      this.lastCounts.delete(project); // the new client needs the current counts
      void this.counts();
    }
    return client;
  }

  /** @throws UnavailableError (503, Retry-After 5 s) when {@link MAX_SSE_CONNECTIONS} streams are open. */
  assertCapacity(): void {
    if (this.clients.size >= MAX_SSE_CONNECTIONS) {
      throw Object.assign(new UnavailableError(`too many live-update connections (${MAX_SSE_CONNECTIONS}) on this server: poll instead`), { retryAfterMs: 5000 });
    }
  }

  onModuleDestroy(): void {
    for (const c of [...this.clients]) c.close();
    this.stop();
  }

  private drop(client: SseClient): void {
    this.clients.delete(client);
    this.pending.delete(client);
    this.watchers.delete(client);
    if (this.clients.size === 0) this.stop();
  }

  private start(): void {
    // Reconnects by itself; clients poll meanwhile.
    this.sub = this.events.subscribe((msg) => this.onChanges(msg));
    const presence = () => void this.events.markListening(PRESENCE_TTL_MS).catch(() => undefined);
    presence();
    this.timers = [
      setInterval(presence, PRESENCE_TTL_MS / 3),
      setInterval(() => void this.counts(), COUNTS_MS),
      setInterval(() => this.flush(), FLUSH_MS),
      setInterval(() => {
        for (const c of this.clients) c.comment('heartbeat');
      }, this.heartbeatMs),
    ];
    for (const t of this.timers) t.unref();
  }

  private stop(): void {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    this.sub?.close();
    this.sub = null;
    // The listener key is left to expire: another process may still have listeners.
  }

  /** A notice from a writer: queued for overview clients, a re-read for the watchers of a named job. */
  private onChanges(msg: string): void {
    let changes: JobChange[];
    try {
      changes = JSON.parse(msg) as JobChange[];
      if (!Array.isArray(changes)) return;
    } catch {
      return;
    }
    for (const [client, p] of this.pending) {
      for (const c of changes) {
        if (!Array.isArray(c) || typeof c[0] !== 'string' || typeof c[1] !== 'string') continue;
        // A client sees its own project's queues only (src/core/project-queue.ts).
        if (!inProject(c[1], client.project)) continue;
        if (p.jobs.size >= MAX_JOBS_PER_FLUSH && !p.jobs.has(c[0])) p.dropped++;
        else p.jobs.set(c[0], c);
      }
    }
    if (!this.watchers.size) return;
    const ids = new Set(changes.map((c) => c[0]));
    // A `?job=` client's job was checked to be of its project when the stream opened (and is again on each re-read).
    for (const [client] of this.watchers) if (client.jobId && ids.has(client.jobId)) void this.refreshJob(client);
  }

  private flush(): void {
    for (const [client, p] of this.pending) {
      if (!p.jobs.size && !p.dropped) continue;
      for (const [id, queue, status, at] of p.jobs.values()) client.send('job', { id, queue: bareQueue(queue), status, updatedAt: iso(at) });
      if (p.dropped) client.send('resync', { dropped: p.dropped });
      p.jobs.clear();
      p.dropped = 0;
    }
  }

  /**
   * Computes the dashboard stats once per project that has overview
   * clients, and sends each project's to its clients when they changed.
   */
  private async counts(): Promise<void> {
    if (this.countsRunning || !this.pending.size) return;
    this.countsRunning = true;
    try {
      const projects = new Set([...this.pending.keys()].map((c) => c.project));
      for (const project of projects) {
        try {
          const stats = await this.dashboard.stats(project);
          const json = JSON.stringify(stats);
          if (json === this.lastCounts.get(project)) continue;
          this.lastCounts.set(project, json);
          for (const client of this.pending.keys()) if (client.project === project) client.send('counts', stats);
        } catch {
          // Redis or PostgreSQL unreachable: the next tick tries again; the console's polling shows the 503.
        }
      }
      for (const project of this.lastCounts.keys()) if (!projects.has(project)) this.lastCounts.delete(project);
    } finally {
      this.countsRunning = false;
    }
  }

  /** Sends a `?job=` client the job as it is now and the events and log lines it has not had yet. */
  private async refreshJob(client: SseClient): Promise<void> {
    const w = this.watchers.get(client);
    if (!w || !client.jobId) return;
    if (w.running) {
      w.again = true;
      return;
    }
    w.running = true;
    try {
      do {
        w.again = false;
        const job = await this.history.getJob(client.jobId);
        if (!job || client.isClosed || !inProject(job.queue, client.project)) return;
        await this.history.settle([job.queue]);
        const [events, logs] = await Promise.all([this.history.jobEvents(client.jobId), this.history.jobLogs(client.jobId)]);
        client.send('job', toApiJob(job));
        for (const e of events.items) if (e.seq > w.seq) client.send('event', toApiEvent(e));
        if (events.items.length) w.seq = Math.max(w.seq, events.items[events.items.length - 1].seq);
        for (const l of logs.items.slice(w.logs)) client.send('log', toApiLog(l));
        w.logs = Math.max(w.logs, logs.items.length);
      } while (w.again && !client.isClosed);
    } catch {
      // Unreachable store: the next notice (or the client's reconnect) tries again.
    } finally {
      w.running = false;
    }
  }
}
