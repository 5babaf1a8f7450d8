import type { OrgRole, Role } from '../core/access';
import { DEFAULT_PROJECT } from '../core/project-queue';

/**
 * Who a request acts as, decided once by the guard from its credentials and
 * handed to services as a parameter (never read from the request body).
 * - `key`: an API key (`keyId` set);
 * - `user`: a dashboard user signed in by the session cookie (`userId` set);
 * - `anonymous`: AUTH=off, every request acts as `admin` of `default`;
 * - `public`: a route that needs no credentials.
 */
export interface Principal {
  kind: 'key' | 'user' | 'anonymous' | 'public';
  /** The project the request acts in. */
  project: string;
  role: Role | null;
  root: boolean;
  keyId: string | null;
  /** The dashboard user of a `user` principal; absent or null otherwise. */
  userId?: string | null;
  /** A member whose payloads, results and log messages read as "[hidden]" (API.md v1.3); absent = false. */
  hidePayloads?: boolean;
  /** On the `org-admin` routes: the user's role in the route's `:org` (absent for a root key). */
  orgRole?: OrgRole;
  /** For logs and the operator audit log: `key:<id>`, `user:<id>` or `anonymous`; never a secret. */
  label: string;
}

export { DEFAULT_PROJECT };

/** The principal of every request while AUTH=off. */
export const ANONYMOUS_ADMIN: Principal = Object.freeze({ kind: 'anonymous', project: DEFAULT_PROJECT, role: 'admin', root: false, keyId: null, label: 'anonymous' }) as Principal;

/** Where the guard leaves the principal on the Fastify request. */
export const PRINCIPAL = Symbol('sluice.principal');

/**
 * The principal the guard attached to this request.
 * @throws Error when none is attached: a route reached without the guard is a bug, and fails closed.
 */
export function principalOf(req: object): Principal {
  const p = (req as { [PRINCIPAL]?: Principal })[PRINCIPAL];
  if (!p) throw new Error('no principal on the request: the auth guard did not run');
  return p;
}

/**
 * Where the guard leaves who a request was, when it refused it for its role
 * (403) or its rate limit (429): read by the operator audit log only
 * ({@link attemptedBy}), never for access.
 */
export const REFUSED_PRINCIPAL = Symbol('sluice.refusedPrincipal');

/** Who a request acted as, or tried to (a refused but authenticated one); null when no credentials were accepted. */
export function attemptedBy(req: object): Principal | null {
  const r = req as { [PRINCIPAL]?: Principal; [REFUSED_PRINCIPAL]?: Principal };
  return r[PRINCIPAL] ?? r[REFUSED_PRINCIPAL] ?? null;
}
