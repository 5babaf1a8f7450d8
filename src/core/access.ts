/**
 * Roles and route access (API.md v1.1 "Projects, API keys, roles").
 * Framework-free: the HTTP guard, the key store and the tests read these.
 *
 * Roles of a credential, within its project:
 * - `admin`: everything in its project, including keys (and users); a root
 *   key is `admin` of every project and may manage projects.
 * - `operator`: configure/pause/resume queues, cancel, DLQ retry/purge,
 *   schedules, plus all that `producer` and `viewer` may.
 * - `producer`: enqueue (single, batch) and read its project's jobs.
 * - `worker`: the external worker protocol only (claim, heartbeat, complete, fail).
 * - `viewer`: every GET except keys, users and the operator audit log.
 */
export const ROLES = ['admin', 'operator', 'producer', 'worker', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

/**
 * What a route requires. A role name means "a credential whose role
 * includes it"; several names mean any of them. Besides roles:
 * - `public`: no credentials (health, readiness, console assets, login);
 * - `metrics`: `Bearer <METRICS_TOKEN>`, or (AUTH=on) a root key; with AUTH=off
 *   and no METRICS_TOKEN, none (API.md v1.2: the installation's, every project's labels);
 * - `root`: a root key only (projects).
 */
export type Requirement = Role | 'public' | 'metrics' | 'root';

/** Which roles each role includes (itself included). */
const INCLUDES: Record<Role, ReadonlySet<Role>> = {
  admin: new Set<Role>(['admin', 'operator', 'producer', 'worker', 'viewer']),
  operator: new Set<Role>(['operator', 'producer', 'viewer']),
  producer: new Set<Role>(['producer']),
  worker: new Set<Role>(['worker']),
  viewer: new Set<Role>(['viewer']),
};

export function isRole(s: unknown): s is Role {
  return typeof s === 'string' && (ROLES as readonly string[]).includes(s);
}

/**
 * True when a credential with `role` (and `root`) satisfies a route that
 * requires any of `required`. `public` and `metrics` are decided by the
 * guard before credentials are looked at, so here they never match.
 */
export function roleSatisfies(role: Role, root: boolean, required: readonly Requirement[]): boolean {
  for (const r of required) {
    if (r === 'root') {
      if (root) return true;
    } else if (r !== 'public' && r !== 'metrics' && INCLUDES[role].has(r)) {
      return true;
    }
  }
  return false;
}
