import type { Pending, PendingJobFields, PendingQueueFields, PathsWithPending as Paths } from './pending-schema';
import type { components } from './schema';

/**
 * The contract's objects as the console reads them: aliases of the schemas
 * generated from the server's OpenAPI document (clients/typescript/src/schema.d.ts,
 * `npm run generate -w @sluice/client`), so a change of the API shows up as a type error here.
 * Only what the document cannot say lives here (constants, the one-status union).
 * Times are ISO-8601 UTC strings; durations are ms.
 */
type S = components['schemas'];

export type JobStatus = S['JobStatus'];
/** Every status, as filters and tabs list them; `blocked` (v1.2 workflows): a flow job waiting for its dependencies. */
export const JOB_STATUSES: JobStatus[] = ['waiting', 'delayed', 'active', 'completed', 'failed', 'cancelled', 'blocked'];
/** A status that can still change by itself (the job is polled) and that a cancel acts on: not finished. */
export const isUnfinished = (s: JobStatus | string): boolean => s === 'waiting' || s === 'delayed' || s === 'active' || s === 'blocked';
export type Role = S['LoginSession']['role'];

export type Backoff = S['Backoff'];
/** A job; `concurrencyKey` from pending-schema.ts until the generated schema has it. */
export type Job = Pending<S['Job'], PendingJobFields>;
export type Page<T> = { items: T[]; nextCursor: string | null };
export type JobEvent = S['JobEvent'];
export type Execution = S['JobExecution'];
export type LogLine = S['JobLogLine'];
export type Counts = S['QueueCounts'];
/** A queue; the issue 20 fields (keyConcurrency, keyRateLimit, fairness, agingMs) from pending-schema.ts until the generated schema has them. */
export type Queue = Pending<S['Queue'], PendingQueueFields>;
/** `GET /queues/:name/keys` item: one concurrency key's counts, its override and the limits in force (API.md v1.1/v1.2 flow control per key). */
export type QueueKey = Paths['/queues/{name}/keys']['get']['responses'][200]['content']['application/json']['items'][number];
/** One key's limits (its override, or the effective ones). */
export type KeyLimits = QueueKey['limits'];
export type Stats = S['DashboardStats'];
/** `GET /flows/:id` (API.md v1.2 "Workflows"): the flow's status, its counts per status and its jobs in request order. */
export type Flow = S['Flow'];
/** One job of a flow: its ref, id, status (null once neither Redis nor the history has it) and the ids it waits for. */
export type FlowJob = Flow['jobs'][number];
/** `GET /jobs/:id/dependencies` item: a dependency's ref, id, status (null when gone), result and last error. */
export type JobDependency = S['JobDependencies']['items'][number];
export type Worker = S['Worker'];
/** A schedule; `concurrencyKey` from pending-schema.ts until the generated schema has it. */
export type Schedule = Pending<S['Schedule'], PendingJobFields>;
export type Session = S['Session'];
/** `GET /jobs/dlq/groups` item (API.md v1.1 "Dead-letter groups"). */
export type DlqGroup = S['DlqGroups']['items'][number];
/** `GET /dashboard/metrics` step: jobs completed and failed in the step starting `at`. */
export type MetricsPoint = S['DashboardMetrics']['series'][number];
/** One field's complaint in a 400 `validation_failed` envelope. */
export type FieldError = S['ErrorDetail'];
/** An organization (API.md v1.3); `orgRole` is the signed-in user's role in it. */
export type Org = S['Org'];
/** A member of an organization: its org role, project roles and hidePayloads. */
export type Member = S['Member'];
export type CreatedMember = S['CreatedMember'];
export type OrgRole = Member['orgRole'];
/** Organization roles, as the members page offers them. */
export const ORG_ROLES: OrgRole[] = ['owner', 'admin', 'member', 'viewer'];
/** A role a member may have in a project (no `worker`: that is for API keys). */
export type MemberRole = Exclude<Role, 'worker'>;
export const MEMBER_ROLES: MemberRole[] = ['admin', 'operator', 'producer', 'viewer'];
/** A project of the session, with its organization and the user's role there. */
export type ProjectAccess = Session['projects'][number];
