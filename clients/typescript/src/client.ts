import createClient, { type Client } from 'openapi-fetch';
import { errorFromResponse, ValidationFailedError } from './errors';
import type { components, operations, paths } from './schema';
import { traceHeaders } from './tracing';
import { callFetch, DEFAULT_RETRIES, type CallOptions, type RetryPolicy, type TransportOptions } from './transport';

type S = components['schemas'];
export type Job = S['Job'];
/** A job as `Prefer: return=minimal` answers it: `{id, status}` (API.md v1.3). */
export type MinimalJob = S['MinimalJob'];
export type JobStatus = S['JobStatus'];
export type ClaimedJob = S['ClaimedJob'];
export type EnqueueJob = S['EnqueueJobDto'];
export type JobEvent = S['JobEvent'];
export type JobExecution = S['JobExecution'];
export type JobLogLine = S['JobLogLine'];
export type Queue = S['Queue'];
export type ConfigureQueue = S['ConfigureQueueDto'];
/** One concurrency key of a queue: counts, its override, the limits in force (`GET /queues/:name/keys`). */
export type QueueKey = S['QueueKey'];
/** The body of `PUT /queues/:name/keys/:key`: `concurrency`, `rateLimit`; null removes one. */
export type KeyOverride = S['KeyOverrideDto'];
export type LeaseRenewed = S['LeaseRenewed'];
/** One job of a `POST /flows` body: the `POST /jobs` fields plus `ref`, `dependsOn` (refs), `onDependencyFailure`. */
export type FlowJob = S['FlowJobDto'];
/** `POST /flows`' answer: the flow id and its jobs in request order, each with its ref and the ids it waits for. */
export type FlowCreated = S['FlowCreated'];
/** `GET /flows/:id`: the flow's status, counts per status and each job's status. */
export type Flow = S['Flow'];
/** One dependency of a flow job with its status, result and last error (`GET /jobs/:id/dependencies`). */
export type JobDependency = S['JobDependencies']['items'][number];
/** `GET /jobs` filters and paging: queue, status, type, cursor, limit (1..500). */
export type ListFilter = NonNullable<operations['listJobs']['parameters']['query']>;
/** `GET /jobs/dlq/all` filters and paging: queue, type, cursor, limit. */
export type DlqFilter = NonNullable<operations['listDeadLetterJobs']['parameters']['query']>;
export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export interface SluiceClientOptions {
  /** e.g. `http://127.0.0.1:3000` */
  baseUrl: string;
  /** `sk_…`: sent as `Authorization: Bearer` (needed when the server runs with AUTH=on). */
  apiKey?: string;
  /** Root keys only: the project to act in (`X-Sluice-Project`). */
  project?: string;
  /** Per attempt, ms (default 10000). A claim's long poll gets its `waitMs` on top. */
  timeoutMs?: number;
  /** Retries on 429/503/timeouts/connection errors (see clients/typescript/README.md "Retries"); `false`: none. Default `{max: 5, baseMs: 200, maxMs: 10000}`. */
  retries?: Partial<RetryPolicy> | false;
  /** Another fetch (default globalThis.fetch). */
  fetch?: typeof fetch;
  /** Called before each retry's wait. */
  onRetry?: TransportOptions['onRetry'];
}

/** Options every call takes: an AbortSignal that cancels it (and its retries). */
export interface RequestOptions {
  signal?: AbortSignal;
}

/** The parts of an openapi-fetch answer this client reads. */
type Answer<T> = { data?: T; error?: unknown; response: Response };

/**
 * A typed client of the Sluice HTTP API (API.md), over openapi-fetch with the
 * types generated from the server's OpenAPI document (src/schema.d.ts).
 * Every method throws a {@link SluiceError} subclass for a non-2xx answer
 * (ValidationFailedError, NotFoundError, ConflictError, LeaseLostError,
 * RateLimitedError, UnavailableError, UnauthorizedError, ForbiddenError …),
 * TimeoutError or ConnectionError when no answer came after the retries.
 */
export class SluiceClient {
  /** The underlying openapi-fetch client (typed by path), for routes without a method here. */
  readonly raw: Client<paths>;
  private readonly transport: TransportOptions;

  constructor(opts: SluiceClientOptions) {
    const headers: Record<string, string> = {};
    if (opts.apiKey) headers.authorization = `Bearer ${opts.apiKey}`;
    if (opts.project) headers['x-sluice-project'] = opts.project;
    const retries = opts.retries === false ? { ...DEFAULT_RETRIES, max: 0 } : { ...DEFAULT_RETRIES, ...opts.retries };
    this.transport = { timeoutMs: opts.timeoutMs ?? 10_000, retries, fetch: opts.fetch, onRetry: opts.onRetry };
    this.raw = createClient<paths>({ baseUrl: opts.baseUrl, headers, fetch: callFetch(this.transport, { idempotent: false }) });
  }

  // ---- jobs

  /**
   * `POST /jobs`. `replayed` is true when the idempotency key matched an
   * existing job with the same body (200 `Idempotent-Replayed`); the job is that one.
   * `debounced` is true when `job.debounce`'s key matched a job of the queue not
   * claimed yet (200 `Sluice-Debounced`): the job is that one, updated.
   * With an idempotency key the call is retried on 503 and connection errors too;
   * without one only on 429 (a repeat could enqueue the job twice).
   * The active OpenTelemetry context, if any, goes along as `traceparent`/`tracestate`.
   * @throws ValidationFailedError (400, with details), ConflictError (409: key reused with another body), PayloadTooLargeError (413)
   */
  async enqueue(job: EnqueueJob, opts: RequestOptions & { idempotencyKey?: string } = {}): Promise<{ job: Job; replayed: boolean; debounced: boolean }> {
    const body = opts.idempotencyKey === undefined ? job : { ...job, idempotencyKey: opts.idempotencyKey };
    const idempotent = body.idempotencyKey !== undefined;
    const { data, response } = await this.send(this.raw.POST('/jobs', { body, fetch: this.fetch({ idempotent, headers: traceHeaders(), signal: opts.signal }) }));
    // No Prefer header is sent here: the answer is the full job.
    return { job: data as Job, replayed: response.headers.get('idempotent-replayed') === 'true', debounced: response.headers.get('sluice-debounced') === 'true' };
  }

  /**
   * `POST /jobs/batch`: 1..1000 jobs, validated first (400 names the index), enqueued atomically per queue.
   * Retried on 503/connection errors only when every job has an idempotency key.
   * `minimal: true` sends `Prefer: return=minimal`: the answer is each job's `{id, status}` in input
   * order (lighter for the server, the wire and this process when the full jobs are not needed).
   */
  async enqueueBatch(jobs: EnqueueJob[], opts?: RequestOptions & { minimal?: false }): Promise<Job[]>;
  async enqueueBatch(jobs: EnqueueJob[], opts: RequestOptions & { minimal: true }): Promise<MinimalJob[]>;
  async enqueueBatch(jobs: EnqueueJob[], opts: RequestOptions & { minimal?: boolean } = {}): Promise<Job[] | MinimalJob[]> {
    const idempotent = jobs.length > 0 && jobs.every((j) => j.idempotencyKey !== undefined);
    const headers: Record<string, string> = { ...traceHeaders(), ...(opts.minimal ? { prefer: 'return=minimal' } : {}) };
    const { data } = await this.send(this.raw.POST('/jobs/batch', { body: { jobs }, fetch: this.fetch({ idempotent, headers, signal: opts.signal }) }));
    return data.jobs;
  }

  /** `GET /jobs/:id`. @throws NotFoundError */
  async get(id: string, opts: RequestOptions = {}): Promise<Job> {
    return (await this.send(this.raw.GET('/jobs/{id}', { params: { path: { id } }, fetch: this.fetch({ idempotent: true, signal: opts.signal }) }))).data;
  }

  /** One page of `GET /jobs` (newest first); pass `nextCursor` back as `cursor` for the next. */
  async listPage(filter: ListFilter = {}, opts: RequestOptions = {}): Promise<Page<Job>> {
    return (await this.send(this.raw.GET('/jobs', { params: { query: filter }, fetch: this.fetch({ idempotent: true, signal: opts.signal }) }))).data;
  }

  /** Every job matching `filter`, newest first, fetching page after page (`limit` per page) as the loop goes on. */
  list(filter: ListFilter = {}, opts: RequestOptions = {}): AsyncGenerator<Job, void, undefined> {
    return paginate((cursor) => this.listPage({ ...filter, cursor }, opts), filter.cursor);
  }

  /** `GET /jobs/:id/events`: the audit trail, oldest first. @throws NotFoundError */
  async events(id: string, opts: RequestOptions = {}): Promise<JobEvent[]> {
    return (await this.send(this.raw.GET('/jobs/{id}/events', { params: { path: { id } }, fetch: this.fetch({ idempotent: true, signal: opts.signal }) }))).data.items;
  }

  /** `GET /jobs/:id/executions`: one row per execution started. @throws NotFoundError */
  async executions(id: string, opts: RequestOptions = {}): Promise<JobExecution[]> {
    return (await this.send(this.raw.GET('/jobs/{id}/executions', { params: { path: { id } }, fetch: this.fetch({ idempotent: true, signal: opts.signal }) }))).data.items;
  }

  /** `GET /jobs/:id/logs`: lines the handlers wrote, oldest first. @throws NotFoundError */
  async logs(id: string, opts: RequestOptions = {}): Promise<JobLogLine[]> {
    return (await this.send(this.raw.GET('/jobs/{id}/logs', { params: { path: { id } }, fetch: this.fetch({ idempotent: true, signal: opts.signal }) }))).data.items;
  }

  /**
   * `DELETE /jobs/:id`. A waiting, delayed or blocked job comes back `cancelled`; an
   * active one comes back still `active` with `cancelRequested: true` (202):
   * its handler is told and it ends `cancelled`.
   * @throws NotFoundError; ConflictError when the job is already terminal
   */
  async cancel(id: string, opts: RequestOptions = {}): Promise<Job> {
    return (await this.send(this.raw.DELETE('/jobs/{id}', { params: { path: { id } }, fetch: this.fetch({ idempotent: true, signal: opts.signal }) }))).data;
  }

  /**
   * `POST /jobs/:id/retry`: a failed or cancelled job back to `waiting` with attempts 0, optionally with a new payload.
   * @throws NotFoundError; ConflictError for a job in another status
   */
  async retry(id: string, opts: RequestOptions & { payload?: Record<string, unknown> } = {}): Promise<Job> {
    const body = opts.payload === undefined ? {} : { payload: opts.payload };
    return (await this.send(this.raw.POST('/jobs/{id}/retry', { params: { path: { id } }, body, fetch: this.fetch({ idempotent: false, signal: opts.signal }) }))).data;
  }

  /** `GET /jobs/:id/dependencies`: a flow job's dependencies with their results (empty outside a flow). @throws NotFoundError */
  async dependencies(id: string, opts: RequestOptions = {}): Promise<JobDependency[]> {
    return (await this.send(this.raw.GET('/jobs/{id}/dependencies', { params: { path: { id } }, fetch: this.fetch({ idempotent: true, signal: opts.signal }) }))).data.items;
  }

  // ---- workflows

  readonly flows = {
    /**
     * `POST /flows`: 1..1000 jobs with dependencies between them (refs), all or nothing.
     * With `idempotencyKey` (1..256 characters, per project) the call is retried on 503 and connection
     * errors too: a repeat answers the flow the first attempt created (`replayed: true`), also once that
     * attempt's answer was lost, and 503 (retried) while it is still being submitted. Without one,
     * retried on 429 only (a repeat after a lost answer would submit the flow twice).
     * @throws ValidationFailedError (400: a cycle, an unknown or duplicate ref… named in the details),
     *   ConflictError (409: the key reused with another body), PayloadTooLargeError (413),
     *   UnavailableError (503: its `details` name the flow id once one was assigned; its message says whether the flow may exist)
     */
    create: async (jobs: FlowJob[], opts: RequestOptions & { idempotencyKey?: string } = {}): Promise<FlowCreated & { replayed: boolean }> => {
      const body = opts.idempotencyKey === undefined ? { jobs } : { jobs, idempotencyKey: opts.idempotencyKey };
      const idempotent = opts.idempotencyKey !== undefined;
      const { data, response } = await this.send(this.raw.POST('/flows', { body, fetch: this.fetch({ idempotent, headers: traceHeaders(), signal: opts.signal }) }));
      return { ...data, replayed: response.headers.get('idempotent-replayed') === 'true' };
    },
    /** `GET /flows/:id`. @throws NotFoundError (also another project's flow) */
    get: async (id: string, opts: RequestOptions = {}): Promise<Flow> =>
      (await this.send(this.raw.GET('/flows/{id}', { params: { path: { id } }, fetch: this.fetch({ idempotent: true, signal: opts.signal }) }))).data,
    /** `DELETE /flows/:id`: cancels every job of the flow that has not finished; returns the flow after. @throws NotFoundError */
    cancel: async (id: string, opts: RequestOptions = {}): Promise<Flow> =>
      (await this.send(this.raw.DELETE('/flows/{id}', { params: { path: { id } }, fetch: this.fetch({ idempotent: true, signal: opts.signal }) }))).data,
  };

  // ---- dead-letter queue

  readonly dlq = {
    /** One page of failed jobs, newest first. */
    listPage: async (filter: DlqFilter = {}, opts: RequestOptions = {}): Promise<Page<Job>> =>
      (await this.send(this.raw.GET('/jobs/dlq/all', { params: { query: filter }, fetch: this.fetch({ idempotent: true, signal: opts.signal }) }))).data,
    /** Every failed job matching `filter`, page after page. */
    list: (filter: DlqFilter = {}, opts: RequestOptions = {}): AsyncGenerator<Job, void, undefined> =>
      paginate((cursor) => this.dlq.listPage({ ...filter, cursor }, opts), filter.cursor),
    /** `POST /jobs/dlq/retry`: every failed job (of `queue`/`type`) back to waiting; returns how many. */
    retryAll: async (filter: { queue?: string; type?: string } = {}, opts: RequestOptions = {}): Promise<number> =>
      (await this.send(this.raw.POST('/jobs/dlq/retry', { body: filter, fetch: this.fetch({ idempotent: true, signal: opts.signal }) }))).data.retried,
    /** `DELETE /jobs/dlq`: removes the failed jobs (of `queue`); returns how many. */
    purge: async (filter: { queue?: string } = {}, opts: RequestOptions = {}): Promise<number> =>
      (await this.send(this.raw.DELETE('/jobs/dlq', { params: { query: filter }, fetch: this.fetch({ idempotent: true, signal: opts.signal }) }))).data.purged,
  };

  // ---- queues

  readonly queues = {
    /** `GET /queues`. */
    list: async (opts: RequestOptions = {}): Promise<Queue[]> => (await this.send(this.raw.GET('/queues', { fetch: this.fetch({ idempotent: true, signal: opts.signal }) }))).data,
    /** `GET /queues/:name`. @throws NotFoundError */
    get: async (name: string, opts: RequestOptions = {}): Promise<Queue> =>
      (await this.send(this.raw.GET('/queues/{name}', { params: { path: { name } }, fetch: this.fetch({ idempotent: true, signal: opts.signal }) }))).data,
    /** `PUT /queues/:name`: creates or updates (e.g. `{external: true}` for an external worker's queue). */
    configure: async (name: string, body: ConfigureQueue, opts: RequestOptions = {}): Promise<Queue> =>
      (await this.send(this.raw.PUT('/queues/{name}', { params: { path: { name } }, body, fetch: this.fetch({ idempotent: true, signal: opts.signal }) }))).data,
    /** `POST /queues/:name/pause`: no job of the queue starts (enqueue still accepted). */
    pause: async (name: string, opts: RequestOptions = {}): Promise<Queue> =>
      (await this.send(this.raw.POST('/queues/{name}/pause', { params: { path: { name } }, fetch: this.fetch({ idempotent: true, signal: opts.signal }) }))).data,
    /** `POST /queues/:name/resume`. */
    resume: async (name: string, opts: RequestOptions = {}): Promise<Queue> =>
      (await this.send(this.raw.POST('/queues/{name}/resume', { params: { path: { name } }, fetch: this.fetch({ idempotent: true, signal: opts.signal }) }))).data,
    /** `GET /queues/:name/keys`: the busiest concurrency keys (at most `limit`, 1..1000, default 50) with their overrides and the limits in force. @throws NotFoundError */
    keys: async (name: string, opts: RequestOptions & { limit?: number } = {}): Promise<QueueKey[]> =>
      (
        await this.send(
          this.raw.GET('/queues/{name}/keys', {
            params: { path: { name }, query: opts.limit === undefined ? {} : { limit: opts.limit } },
            fetch: this.fetch({ idempotent: true, signal: opts.signal }),
          }),
        )
      ).data.items,
    /**
     * `PUT /queues/:name/keys/:key`: limits for one key in place of the queue's keyConcurrency / keyRateLimit
     * (only the fields sent change; null removes one). The key travels URL-encoded. @throws NotFoundError (unknown queue)
     */
    setKeyOverride: async (name: string, key: string, body: KeyOverride, opts: RequestOptions = {}): Promise<QueueKey> =>
      (await this.send(this.raw.PUT('/queues/{name}/keys/{key}', { params: { path: { name, key: keyInPath(key) } }, body, fetch: this.fetch({ idempotent: true, signal: opts.signal }) }))).data,
    /** `DELETE /queues/:name/keys/:key`: removes the key's override (idempotent). @throws NotFoundError (unknown queue) */
    deleteKeyOverride: async (name: string, key: string, opts: RequestOptions = {}): Promise<QueueKey> =>
      (await this.send(this.raw.DELETE('/queues/{name}/keys/{key}', { params: { path: { name, key: keyInPath(key) } }, fetch: this.fetch({ idempotent: true, signal: opts.signal }) }))).data,
  };

  // ---- external worker protocol (ExternalWorker uses these)

  /**
   * `POST /queues/:name/claim`: up to `max` jobs under a lease of `leaseMs`, waiting up to `waitMs` (long poll)
   * when none is ready. The request's timeout is `waitMs` + the client's. Aborting `signal` ends the long poll;
   * the server hands back what it claimed for a client that went away.
   */
  async claim(queue: string, body: S['ClaimDto'], opts: RequestOptions = {}): Promise<ClaimedJob[]> {
    const timeoutMs = (body.waitMs ?? 0) + this.transport.timeoutMs;
    // A lost answer leaves the claimed jobs to their lease's expiry: harmless to ask again.
    const fetch = this.fetch({ idempotent: true, timeoutMs, signal: opts.signal });
    return (await this.send(this.raw.POST('/queues/{name}/claim', { params: { path: { name: queue } }, body, fetch }))).data.jobs;
  }

  /** `POST /jobs/:id/heartbeat`: renews the lease, sends progress and log lines. @throws LeaseLostError */
  async heartbeat(id: string, body: S['HeartbeatDto'], opts: RequestOptions = {}): Promise<LeaseRenewed> {
    return (await this.send(this.raw.POST('/jobs/{id}/heartbeat', { params: { path: { id } }, body, fetch: this.fetch({ idempotent: true, signal: opts.signal }) }))).data;
  }

  /** `POST /jobs/:id/complete` (a repeat is fenced by the lock token: at worst LeaseLostError). @throws LeaseLostError */
  async complete(id: string, body: S['CompleteDto'], opts: RequestOptions = {}): Promise<Job> {
    return (await this.send(this.raw.POST('/jobs/{id}/complete', { params: { path: { id } }, body, fetch: this.fetch({ idempotent: true, signal: opts.signal }) }))).data;
  }

  /** `POST /jobs/:id/fail`: the job comes back `delayed` (retry), `failed` (DLQ) or `cancelled`. @throws LeaseLostError */
  async fail(id: string, body: S['FailDto'], opts: RequestOptions = {}): Promise<Job> {
    return (await this.send(this.raw.POST('/jobs/{id}/fail', { params: { path: { id } }, body, fetch: this.fetch({ idempotent: true, signal: opts.signal }) }))).data;
  }

  /**
   * `POST /jobs/:id/release` (API.md v1.2): gives the job back without using an attempt: `waiting`, or `delayed`
   * by `delayMs` (`cancelled` when a cancel was requested). @throws LeaseLostError
   */
  async release(id: string, body: S['ReleaseDto'], opts: RequestOptions = {}): Promise<Job> {
    return (await this.send(this.raw.POST('/jobs/{id}/release', { params: { path: { id } }, body, fetch: this.fetch({ idempotent: true, signal: opts.signal }) }))).data;
  }

  // ---- plumbing

  private fetch(call: CallOptions): (req: Request) => Promise<Response> {
    return callFetch(this.transport, call);
  }

  /** The data of a 2xx answer; a typed error for any other. */
  private async send<T>(p: Promise<Answer<T>>): Promise<{ data: T; response: Response }> {
    const { data, error, response } = await p;
    if (!response.ok) throw errorFromResponse(response.status, error, response.headers);
    return { data: data as T, response };
  }
}

/**
 * A concurrency key as a path segment. `.` and `..` cannot be one: fetch's URL
 * parser resolves them as dot segments (even percent-encoded), so the request
 * would go to another route. Refused before anything is sent.
 * @throws ValidationFailedError (status 0: not the server's answer) naming `key`.
 */
function keyInPath(key: string): string {
  if (key !== '.' && key !== '..') return key;
  const message = 'the keys "." and ".." cannot travel in a URL path (URL parsers resolve them as dot segments)';
  throw new ValidationFailedError(`invalid key: ${message}`, 0, 'validation_failed', [{ path: 'key', message }]);
}

/** Yields the items of page after page until `nextCursor` is null. */
async function* paginate<T>(page: (cursor: string | undefined) => Promise<Page<T>>, first?: string): AsyncGenerator<T, void, undefined> {
  let cursor = first;
  do {
    const p = await page(cursor);
    yield* p.items;
    cursor = p.nextCursor ?? undefined;
  } while (cursor !== undefined);
}
