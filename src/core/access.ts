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
 * - `user`: a dashboard user signed in by the session cookie (any role); never a key;
 * - `org-admin`: an `owner` or `admin` of the organization the route's `:org` names
 *   (`POST /projects`: its body's `org`, default `default`) (a session's user), or a root key. Decided by the guard, which looks the
 *   membership up (a user who is no member of it gets 404, as for anything unknown).
 */
export type Requirement = Role | 'public' | 'metrics' | 'root' | 'user' | 'org-admin';

/**
 * Roles of a member in an organization (API.md v1.3 "Organizations and members"):
 * - `owner`, `admin`: manage the organization's members (and its projects); `admin` of
 *   every project of it. Only an owner (or root) makes, changes or removes an owner.
 * - `member`: the roles given per project, nothing else.
 * - `viewer`: `viewer` of every project of the organization, or the role given there.
 */
export const ORG_ROLES = ['owner', 'admin', 'member', 'viewer'] as const;
export type OrgRole = (typeof ORG_ROLES)[number];

/** Roles a member may be given in a project (`worker` is for API keys). */
export const MEMBER_ROLES = ['admin', 'operator', 'producer', 'viewer'] as const;

export function isOrgRole(s: unknown): s is OrgRole {
  return typeof s === 'string' && (ORG_ROLES as readonly string[]).includes(s);
}

/** True for the organization roles that manage members and are `admin` of every project. */
export function managesOrg(orgRole: OrgRole | null | undefined): boolean {
  return orgRole === 'owner' || orgRole === 'admin';
}

/**
 * A member's role in one project of its organization: `admin` for an owner or
 * admin, else the role given in that project, else `viewer` for an org viewer;
 * null = the member has no role there (the project is invisible to it).
 */
export function memberProjectRole(orgRole: OrgRole, given: Role | null): Role | null {
  if (managesOrg(orgRole)) return 'admin';
  if (given) return given;
  return orgRole === 'viewer' ? 'viewer' : null;
}

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
    if (r === 'root' || r === 'org-admin') {
      if (root) return true;
    } else if (r !== 'public' && r !== 'metrics' && r !== 'user' && INCLUDES[role].has(r)) {
      return true;
    }
  }
  return false;
}
