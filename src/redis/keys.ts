/**
 * Redis key naming. Every key of a queue is `<prefix>:{<queue>}:<kind>`: the
 * braces are a Redis Cluster hash tag, so all keys of one queue share a slot
 * and each script touches one slot. Only this file and the store know names.
 */
export interface QueueKeys {
  /** `<prefix>:{<queue>}:`, passed to scripts to build job keys. */
  base: string;
  waiting: string;
  delayed: string;
  active: string;
  failed: string;
  meta: string;
  events: string;
  wake: string;
  rateLimit: string;
  /** Finished jobs kept in Redis under KEEP_COMPLETED_* (sorted by finish time). */
  done: string;
  /** Lock held by the mirror writer that mirrors this queue's stream (also by a restore). */
  mirrorLock: string;
  /**
   * Epoch marker: a string set when the queue is first taken over by an audit
   * writer (and recorded in PostgreSQL's `queues` table) or when a restore
   * ends. Its absence while PostgreSQL knows the queue means Redis lost the
   * queue's data (see src/restore/restore.ts).
   */
  epoch: string;
  /** Flow control per key (lua/includes/lanes.lua): per-key overrides, a hash key -> "concurrency|rateMax|rateDurationMs". */
  keyOverrides: string;
  /** Workflows (docs/workflows.md): jobs waiting for dependencies, by creation time (ms). */
  blocked: string;
  /** Workflows: the queue's flow outbox, a list of "flowId|jobId|outcome|n" for the flow worker (lua/includes/flowout.lua). */
  flowOutbox: string;
  /** Workflows: outbox entries a flow worker took and has not acknowledged (sorted set: entry -> lease end, ms). */
  flowInFlight: string;
}

export function queueKeys(prefix: string, queue: string): QueueKeys {
  const base = `${prefix}:{${queue}}:`;
  return {
    base,
    waiting: base + 'waiting',
    delayed: base + 'delayed',
    active: base + 'active',
    failed: base + 'failed',
    meta: base + 'meta',
    events: base + 'events',
    wake: base + 'wake',
    rateLimit: base + 'rl',
    done: base + 'done',
    mirrorLock: base + 'auditlock',
    epoch: base + 'epoch',
    keyOverrides: base + 'kov',
    blocked: base + 'blocked',
    flowOutbox: base + 'flowq',
    flowInFlight: base + 'flowrun',
  };
}

export const jobKey = (prefix: string, queue: string, id: string): string => `${prefix}:{${queue}}:job:${id}`;

/**
 * A `POST /flows` idempotency key of a project (lua/claimIdempotencyKey-1.lua):
 * `<prefix>:{flows@<project>}:idem:<key>`, one slot per project's flow keys.
 */
export const flowIdempotencyKey = (prefix: string, project: string, key: string): string => `${prefix}:{flows@${project}}:idem:${key}`;

/** Global set of known queue names (its own slot; never touched by scripts). */
export const queuesKey = (prefix: string): string => `${prefix}:queues`;

/** Worker registry: a sorted set of worker ids by last heartbeat (ms) and one hash per worker. */
export const workersKey = (prefix: string): string => `${prefix}:workers`;
export const workerKey = (prefix: string, id: string): string => `${prefix}:worker:${id}`;

/** Pub/sub channel on which cancel requests for active jobs are announced. */
export const cancelChannel = (prefix: string): string => `${prefix}:cancel`;

/**
 * Pub/sub channel on which a queue's name is published when an entry lands in
 * its empty flow outbox (lua/includes/flowout.lua): the flow worker wakes.
 */
export const flowWakeChannel = (prefix: string): string => `${prefix}:flows:wake`;

/** Pub/sub channel announcing a queue name the first time it is registered (mirror writers take it over at once). */
export const newQueueChannel = (prefix: string): string => `${prefix}:queues:new`;

/**
 * Pub/sub channel on which mirror writers announce the jobs each committed
 * batch changed (src/mirror/job-changes.ts), for the console's live updates.
 */
export const jobChangesChannel = (prefix: string): string => `${prefix}:jobs:changed`;

/**
 * Set (with an expiry: a few ownership rounds) by every running mirror writer
 * at each ownership round: the history reads' read-your-writes barrier waits
 * for a queue no writer holds yet (a brand-new one) only while some writer runs.
 */
export const mirrorWritersKey = (prefix: string): string => `${prefix}:audit:writers`;

/** Set (with an expiry) while some API process has live-update listeners: writers publish only then. */
export const liveListenersKey = (prefix: string): string => `${prefix}:live:listeners`;

/**
 * External workers seen by the API (src/workers/external/external-workers.ts), per
 * project (a worker id is the project's: two projects' `w1` are two workers):
 * a sorted set of ids by last seen (ms) and one hash per worker. The
 * `default` project's keys are those of before projects; another's carry
 * `@<project>` (a project name holds no `:`, so no key of one project is
 * another's).
 */
export const externalWorkersKey = (prefix: string, project = 'default'): string =>
  project === 'default' ? `${prefix}:xworkers` : `${prefix}:xworkers@${project}`;
export const externalWorkerKey = (prefix: string, id: string, project = 'default'): string =>
  project === 'default' ? `${prefix}:xworker:${id}` : `${prefix}:xworker@${project}:${id}`;

/** The consumer group through which the history mirror reads every queue's events stream. */
export const MIRROR_GROUP = 'sluice-audit';

/** Key namespace of the HTTP API's per-address rate limit (@fastify/rate-limit's Redis store). */
export const httpRateLimitNamespace = (prefix: string): string => `${prefix}:ratelimit:`;
/**
 * API keys (src/redis/stores/api-key-store.ts): SHA-256 of the secret → record,
 * key id → SHA-256, key id → last use (ms).
 */
export const apiKeyKeys = (prefix: string): { byHash: string; ids: string; lastUsed: string } => ({
  byHash: `${prefix}:auth:keys`,
  ids: `${prefix}:auth:keyids`,
  lastUsed: `${prefix}:auth:lastused`,
});

/** A dashboard session's record, by the SHA-256 of its token (a string with the session's expiry). */
export const sessionKey = (prefix: string, hash: string): string => `${prefix}:auth:session:${hash}`;
/** The set of a user's session hashes. */
export const userSessionsKey = (prefix: string, userId: string): string => `${prefix}:auth:user-sessions:${userId}`;

/**
 * A failed-login counter: `u:<sha256 of the lower-cased username>` or
 * `a:<address bucket>` (src/auth/login-limiter.ts).
 */
export const loginFailKey = (prefix: string, kind: 'user' | 'address', id: string): string => `${prefix}:auth:login-fail:${kind === 'user' ? 'u' : 'a'}:${id}`;

/** The token bucket of one API key (lua/takeToken-1.lua). */
export const keyBucketKey = (prefix: string, keyId: string): string => `${prefix}:ratelimit:key:${keyId}`;

/** The projects registry: a hash of project name → creation time (ms). */
export const projectsKey = (prefix: string): string => `${prefix}:projects`;

/** The operator-log buffer (one hash tag: lua/recordAction-2.lua touches both): a stream and its drop counter. */
export const oplogKeys = (prefix: string): { stream: string; dropped: string } => ({
  stream: `${prefix}:{oplog}:stream`,
  dropped: `${prefix}:{oplog}:dropped`,
});

/** Pub/sub channel on which the API announces schedule changes to the schedulers. */
export const schedulesChannel = (prefix: string): string => `${prefix}:schedules`;

/** Hash: process rebuilding Redis from PostgreSQL → until when (epoch ms); every process's `/readyz` answers `restoring` while one is current (src/restore/loss-watch.ts). */
export const restoringKey = (prefix: string): string => `${prefix}:restoring`;
/** String: set once the registries PostgreSQL keeps (keys, projects, queue settings) are in this Redis; gone = Redis lost them (src/restore/loss-watch.ts). */
export const installedKey = (prefix: string): string => `${prefix}:installed`;
/** Set: queues whose settings changed while PostgreSQL could not take the copy (src/queues/settings-keeper.ts saves them later). */
export const unsavedSettingsKey = (prefix: string): string => `${prefix}:settings:unsaved`;

/** Workflows: the set of queues that have had flow jobs, whose outboxes the flow worker reads (its own slot). */
export const flowQueuesKey = (prefix: string): string => `${prefix}:flows:queues`;
