import { createHash } from 'node:crypto';
import { CanActivate, ExecutionContext, Inject, Injectable, Optional } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import { managesOrg, roleSatisfies, type Requirement } from '../core/access';
import { bearerToken, SECRET_PATTERN, sameHash } from '../core/api-key';
import { ForbiddenError, SluiceError, UnauthorizedError, UnavailableError } from '../core/errors';
import { RestoreState } from '../restore/restore-state';
import type { SluiceConfig } from '../config/config';
import { SLUICE_CONFIG } from '../config/config.module';
import { ACCESS_METADATA } from '../http/access.decorator';
import { refuseUnreadBody } from '../http/no-body';
import { readsBody } from '../http/route-table';
import { KeyRateLimiter } from './key-rate-limiter';
import { KeyStore, type KeyRecord } from './key-store';
import { ProjectStore } from './project-store';
import { MemberStore, OrgNotFoundError } from './member-store';
import { isProjectName } from '../core/project-queue';
import { ANONYMOUS_ADMIN, DEFAULT_PROJECT, PRINCIPAL, REFUSED_PRINCIPAL, type Principal } from './principal';
import { cookieCsrfRefusal, hasSessionCookie, sessionToken } from './session-cookie';
import { SessionStore, type SessionRecord } from './session-store';

const PUBLIC: Principal = Object.freeze({ kind: 'public', project: DEFAULT_PROJECT, role: null, root: false, keyId: null, label: 'public' }) as Principal;

/** What `/metrics` asks of credentials that are not METRICS_TOKEN while AUTH=on. */
const ROOT_ONLY: readonly Requirement[] = Object.freeze(['root'] as Requirement[]);

const SESSION_REFUSED = 'session expired or signed out: log in again (POST /auth/login)';

/** Header a root key names its project with (API.md v1.1). */
export const PROJECT_HEADER = 'x-sluice-project';

/**
 * The one guard (global): applies each route's `@Access` declaration.
 * - `public` routes: no credentials looked at;
 * - `metrics`: `Bearer <METRICS_TOKEN>` when that is set; with AUTH=on also a root
 *   key (401 without credentials, 403 for a project's key or session), with
 *   AUTH=off and no METRICS_TOKEN public;
 * - AUTH=off: every request acts as `admin` of `default` (root routes stay refused);
 * - projects: a key or session acts in its project; a root key in the one its
 *   `X-Sluice-Project` header names (default `default`; other credentials
 *   ignore it); an unknown project → 404 `not_found`. Services get
 *   the project from the principal only, never from a request body;
 * - AUTH=on: `Authorization: Bearer <key>` → 401 `unauthorized` when absent,
 *   unknown, revoked or expired; 403 `forbidden` when the key's role may not;
 *   429 `rate_limited` when the key's token bucket is empty (a key without a
 *   limit, own or default, costs no Redis call and stays synchronous).
 * - AUTH=on without `Authorization`: the dashboard's session cookie, same
 *   rules (401 unknown, revoked or expired session; 403 role), and a
 *   state-changing request must carry `Origin` or `Sec-Fetch-Site: same-origin`
 *   (403 otherwise: src/auth/session-cookie.ts `cookieCsrfRefusal`).
 * A route without a declaration is refused (fail closed; boot refuses it too).
 * Leaves the {@link Principal} on the request for the controllers.
 */
@Injectable()
export class AuthGuard implements CanActivate {
  private readonly metricsTokenHash: string | null;
  /** Each handler's requirement and whether it reads a body, read once (the metadata never changes after boot). */
  private readonly routes = new WeakMap<object, { required: readonly Requirement[] | null; takesBody: boolean }>();

  constructor(
    private readonly reflector: Reflector,
    @Inject(SLUICE_CONFIG) private readonly config: SluiceConfig,
    private readonly keys: KeyStore,
    private readonly sessions: SessionStore,
    @Optional() private readonly limiter?: KeyRateLimiter,
    @Optional() private readonly projects?: ProjectStore,
    @Optional() private readonly restore?: RestoreState,
    @Optional() private readonly members?: MemberStore | null,
  ) {
    this.metricsTokenHash = config.metricsToken ? sha256(config.metricsToken) : null;
  }

  canActivate(ctx: ExecutionContext): boolean | Promise<boolean> {
    const handler = ctx.getHandler();
    let route = this.routes.get(handler);
    if (route === undefined) {
      const required = this.reflector.getAllAndOverride<Requirement[] | undefined>(ACCESS_METADATA, [handler, ctx.getClass()]) ?? null;
      route = { required, takesBody: readsBody(ctx.getClass(), handler.name) };
      this.routes.set(handler, route);
    }
    const { required, takesBody } = route;
    if (!required) throw new SluiceError('forbidden', 'this route declares no access rule');
    const req = ctx.switchToHttp().getRequest<FastifyRequest>();
    const p = this.principalFor(req, required);
    if (p instanceof Promise) {
      return p.then((principal) => {
        (req as unknown as Record<symbol, Principal>)[PRINCIPAL] = principal;
        if (!takesBody) refuseUnreadBody(req.body);
        return true;
      });
    }
    (req as unknown as Record<symbol, Principal>)[PRINCIPAL] = p;
    // Credentials first (401/403), then the body a route without @Body refuses (API.md v1.2).
    if (!takesBody) refuseUnreadBody(req.body);
    return true;
  }

  /**
   * Decides who `req` acts as for a route that requires `required`:
   * synchronously while the key's lookup is cached, else a promise.
   * @throws (or rejects with) UnauthorizedError, ForbiddenError, ProjectNotFoundError (404).
   */
  principalFor(req: FastifyRequest, required: readonly Requirement[]): Principal | Promise<Principal> {
    if (required.includes('public')) return PUBLIC;
    if (required.includes('metrics')) {
      const token = bearerToken(req.headers.authorization);
      if (this.metricsTokenHash && token && sameHash(sha256(token), this.metricsTokenHash)) return PUBLIC;
      if (!this.config.auth) {
        if (!this.metricsTokenHash) return PUBLIC;
        throw new UnauthorizedError('metrics need Authorization: Bearer <METRICS_TOKEN>');
      }
      // AUTH=on: /metrics is installation-wide (every project's labels), so beside METRICS_TOKEN only a root key
      // (API.md v1.2); no or unknown credentials → 401, a project's key or session → 403.
      if (!token && !(req.headers.authorization === undefined && hasSessionCookie(req.headers.cookie))) {
        throw new UnauthorizedError('metrics need Authorization: Bearer <METRICS_TOKEN> or a root key');
      }
      return this.principalFor(req, ROOT_ONLY);
    }
    if (!this.config.auth) {
      if (!roleSatisfies('admin', false, required)) throw new ForbiddenError('this route needs a root key (AUTH is off: requests act as admin of the default project)');
      return ANONYMOUS_ADMIN;
    }
    if (req.headers.authorization === undefined && hasSessionCookie(req.headers.cookie)) return this.sessionPrincipalFor(req, required);
    const token = bearerToken(req.headers.authorization);
    if (!token) throw new UnauthorizedError();
    if (!SECRET_PATTERN.test(token)) throw new UnauthorizedError('invalid, revoked or expired API key');
    const rec = this.orRestoring(token, this.keys.authenticate(token));
    if (!this.limiter) return rec instanceof Promise ? rec.then((r) => this.keyPrincipal(req, r, required)) : this.keyPrincipal(req, rec, required);
    return rec instanceof Promise ? rec.then((r) => this.limited(req, r, required)) : this.limited(req, rec, required);
  }

  /**
   * A key Redis does not know while Redis is rebuilt from PostgreSQL (API.md
   * v1.3): 503 `unavailable` with Retry-After, not 401 — the key may be one
   * the rebuild has not given back yet; its absence is not cached.
   */
  private orRestoring(token: string, rec: KeyRecord | null | Promise<KeyRecord | null>): KeyRecord | null | Promise<KeyRecord | null> {
    if (!this.restore) return rec;
    if (rec instanceof Promise) return rec.then((r) => r ?? this.refuseWhileRestoring(token));
    return rec ?? this.refuseWhileRestoring(token);
  }

  /** @returns null (the key is unknown: 401 follows) unless Redis is being rebuilt. @throws RestoringError (503) while it is. */
  private refuseWhileRestoring(token: string): null {
    if (!this.restore?.restoringNow()) return null;
    this.keys.forget(token);
    throw new RestoringError();
  }

  /**
   * {@link keyPrincipal}, then one token of the key's bucket when it has a limit
   * (its own, else KEY_RATE_LIMIT_*): synchronous for a key without one.
   * @throws (or rejects with) what keyPrincipal throws; RateLimitedError (429).
   */
  private limited(req: FastifyRequest, rec: KeyRecord | null, required: readonly Requirement[]): Principal | Promise<Principal> {
    const principal = this.keyPrincipal(req, rec, required);
    const limit = this.limiter!.limitOf(rec!.rateLimit);
    if (!limit) return principal;
    const take = (p: Principal) =>
      this.limiter!.take(rec!.id, limit).then(
        () => p,
        (e: unknown) => {
          // Who was refused, for the operator audit log (never read for access).
          (req as unknown as Record<symbol, Principal>)[REFUSED_PRINCIPAL] = p;
          throw e;
        },
      );
    return principal instanceof Promise ? principal.then(take) : take(principal);
  }

  private sessionPrincipalFor(req: FastifyRequest, required: readonly Requirement[]): Principal | Promise<Principal> {
    const csrf = cookieCsrfRefusal(req.method, req.headers);
    if (csrf) throw csrf;
    const token = sessionToken(req.headers.cookie);
    if (!token) throw new UnauthorizedError(SESSION_REFUSED);
    const rec = this.sessions.authenticate(token);
    return rec instanceof Promise ? rec.then((r) => this.userPrincipal(req, r, required)) : this.userPrincipal(req, rec, required);
  }

  /**
   * A session acts in its current project with the user's role there (API.md v1.3; the
   * record holds both, and any change of the user's roles ends its sessions);
   * X-Sluice-Project is for root keys. `user` routes take any session; `org-admin`
   * routes ask PostgreSQL for the user's role in the path's `:org`.
   */
  private userPrincipal(req: FastifyRequest, rec: SessionRecord | null, required: readonly Requirement[]): Principal | Promise<Principal> {
    if (!rec) throw new UnauthorizedError(SESSION_REFUSED);
    const principal: Principal = {
      kind: 'user',
      project: rec.project,
      role: rec.role,
      root: false,
      keyId: null,
      userId: rec.userId,
      hidePayloads: rec.hidePayloads === true,
      label: `user:${rec.userId}`,
    };
    if (roleSatisfies(rec.role, false, required) || required.includes('user')) return principal;
    if (required.includes('org-admin')) return this.orgAdmin(req, principal);
    (req as unknown as Record<symbol, Principal>)[REFUSED_PRINCIPAL] = principal;
    throw new ForbiddenError(`role ${rec.role} may not ${req.method} ${req.routeOptions.url ?? req.url.split('?')[0]}`);
  }

  /**
   * An `org-admin` route for a session: the user's role in the organization the
   * path's `:org` names. No member of it (or no such organization) → 404, as for
   * anything of another tenant; a member that is not owner or admin → 403.
   */
  private async orgAdmin(req: FastifyRequest, principal: Principal): Promise<Principal> {
    // The path's `:org`; a route without one (`POST /projects`) names it in its body, default `default`.
    const params = req.params as Record<string, unknown> | undefined;
    const bodyOrg = (req.body as Record<string, unknown> | null | undefined)?.org;
    const org = params && 'org' in params ? params.org : typeof bodyOrg === 'string' ? bodyOrg : DEFAULT_PROJECT;
    if (typeof org !== 'string' || !isProjectName(org)) throw new OrgNotFoundError(typeof org === 'string' ? org : '');
    const orgRole = this.members ? await this.members.orgRoleOf(principal.userId as string, org) : null;
    if (!orgRole) throw new OrgNotFoundError(org);
    const p = { ...principal, orgRole };
    if (!managesOrg(orgRole)) {
      (req as unknown as Record<symbol, Principal>)[REFUSED_PRINCIPAL] = p;
      throw new ForbiddenError(`organization role ${orgRole} may not ${req.method} ${req.routeOptions.url ?? req.url.split('?')[0]} (owner or admin only)`);
    }
    return p;
  }

  /**
   * The principal of a live key: a key acts in its project; a root key in the
   * project named by `X-Sluice-Project` (default `default`), which must exist.
   * Other keys ignore the header. Synchronous unless a root key names a
   * project not seen yet by this process (one HEXISTS).
   * @throws UnauthorizedError; ProjectNotFoundError (404); ForbiddenError (403).
   */
  private keyPrincipal(req: FastifyRequest, rec: KeyRecord | null, required: readonly Requirement[]): Principal | Promise<Principal> {
    if (!rec) throw new UnauthorizedError('invalid, revoked or expired API key');
    // X-Sluice-Project is for root keys; any other key acts in its own project whatever it sends.
    if (!rec.root) return this.rolePrincipal(req, rec, rec.project, required);
    const h = req.headers[PROJECT_HEADER];
    if (Array.isArray(h)) throw new ProjectNotFoundError(h.join(','));
    const project = h === undefined || h === '' ? DEFAULT_PROJECT : h;
    if (!isProjectName(project)) throw new ProjectNotFoundError(project);
    const known = this.projects ? this.projects.exists(project) : project === DEFAULT_PROJECT;
    if (known === true) return this.rolePrincipal(req, rec, project, required);
    if (known === false) throw new ProjectNotFoundError(project);
    return known.then((ok) => {
      if (!ok) throw new ProjectNotFoundError(project);
      return this.rolePrincipal(req, rec, project, required);
    });
  }

  private rolePrincipal(req: FastifyRequest, rec: KeyRecord, project: string, required: readonly Requirement[]): Principal {
    const principal: Principal = { kind: 'key', project, role: rec.role, root: rec.root, keyId: rec.id, label: `key:${rec.id}` };
    if (!roleSatisfies(rec.role, rec.root, required)) {
      // Who was refused, for the operator audit log (never read for access).
      (req as unknown as Record<symbol, Principal>)[REFUSED_PRINCIPAL] = principal;
      throw new ForbiddenError(`role ${rec.role} may not ${req.method} ${req.routeOptions.url ?? req.url.split('?')[0]}`);
    }
    return principal;
  }
}

/** An unknown project (HTTP 404 `not_found`, as for any other project's resource). */
export class ProjectNotFoundError extends SluiceError {
  constructor(project: string) {
    super('not_found', `project ${JSON.stringify(project.slice(0, 64))} not found`);
  }
}

function sha256(s: string): string {
  return createHash('sha256').update(s, 'utf8').digest('hex');
}


/** 503 for a key Redis does not know while it is rebuilt from PostgreSQL. */
export class RestoringError extends UnavailableError {
  readonly retryAfterMs = 2000;
  constructor() {
    super('Redis is being rebuilt from PostgreSQL after it lost its data: this key is not known yet; retry shortly');
  }
}
