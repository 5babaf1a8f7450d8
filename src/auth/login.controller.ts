import { Body, Controller, Get, HttpCode, Inject, Post, Req, Res } from '@nestjs/common';
import { Audited } from '../http/audited.decorator';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ROLES, type Role } from '../core/access';
import type { SluiceConfig } from '../config/config';
import { SLUICE_CONFIG } from '../config/config.module';
import { Access } from '../http/access.decorator';
import { LoginDto } from './dto/users.dto';
import { AcceptInviteDto, SwitchProjectDto } from './dto/orgs.dto';
import { ForbiddenError, UnauthorizedError } from '../core/errors';
import { MemberStore, type ProjectAccess } from './member-store';
import { OrgsService } from './orgs.service';
import { DEFAULT_ORG } from './org-store';
import { LoginService, type LoginAnswer } from './login.service';
import { principalOf } from './principal';
import { cookieCsrfRefusal, overTls, sessionCookie, sessionToken } from './session-cookie';
import { SessionStore } from './session-store';
import { ApiAnswer, ApiErrors } from '../http/openapi/decorators';

/** `GET /auth/session`: who the request acts as. */
export interface SessionAnswer {
  /** `user` (session cookie), `key` (API key) or `anonymous` (AUTH=off). */
  kind: string;
  user: { id: string; username: string } | null;
  keyId: string | null;
  project: string;
  role: Role | null;
  /** When the session ends unless activity refreshes it; null for keys and AUTH=off. */
  expiresAt: string | null;
  /** The organization of `project`. */
  org: string;
  /** Whether payloads, results and log messages read as "[hidden]" for this request. */
  hidePayloads: boolean;
  /** Every project the user may switch to, with its role there (a key: its project). */
  projects: { name: string; org: string; role: Role }[];
  /** The signed-in user's organizations with its role in each (the console offers the members page to owners and admins); [] for keys and AUTH=off. */
  orgs: { name: string; orgRole: string }[];
}

/** Dashboard sign-in (the console of the operator issue uses these). */
@ApiTags('auth')
@Controller('auth')
export class LoginController {
  constructor(
    private readonly login: LoginService,
    private readonly sessions: SessionStore,
    @Inject(SLUICE_CONFIG) private readonly config: SluiceConfig,
    private readonly members: MemberStore,
    private readonly orgs: OrgsService,
  ) {}

  @Post('login')
  @HttpCode(200)
  @Access('public')
  @Audited('auth.login', { body: 'username' })
  @ApiOperation({ operationId: 'login', summary: 'Log in: sets the session cookie (HttpOnly, SameSite=Strict; Secure over TLS). 5 failures per 15 min per user and per address → 429' })
  @ApiAnswer(200, 'LoginSession', 'Signed in: the session cookie is in `Set-Cookie` (never in the body).', ['Set-Cookie'])
  @ApiErrors([401, 'Wrong username or password, a disabled user, or no role in the project asked for: one message for all (code unauthorized).'])
  async signIn(@Body() body: LoginDto, @Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply): Promise<LoginAnswer> {
    const { answer, token } = await this.login.login(body, req);
    void reply.header('set-cookie', sessionCookie(token, { secure: overTls(req), maxAgeMs: this.config.sessionMaxMs }));
    void reply.header('cache-control', 'no-store');
    return answer;
  }

  @Post('logout')
  @HttpCode(200)
  @Access('public')
  @Audited('auth.logout')
  @ApiOperation({ operationId: 'logout', summary: 'Log out: ends the session of the cookie and clears it' })
  @ApiAnswer(200, 'LoggedOut', 'Signed out (also without a session): `Set-Cookie` clears the cookie.', ['Set-Cookie'])
  async signOut(@Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply): Promise<{ loggedOut: true }> {
    const token = sessionToken(req.headers.cookie);
    if (token) {
      const csrf = cookieCsrfRefusal(req.method, req.headers);
      if (csrf) throw csrf;
      await this.sessions.destroy(token);
    }
    void reply.header('set-cookie', sessionCookie(null, { secure: overTls(req), maxAgeMs: 0 }));
    return { loggedOut: true };
  }

  @Get('session')
  @Access(...ROLES)
  @ApiOperation({ operationId: 'getSession', summary: 'Who this request acts as, and the projects a signed-in user may switch to (the console asks on load); 401 without a session or key' })
  @ApiAnswer(200, 'Session', 'Who the request acts as: a signed-in user, an API key, or anonymous (AUTH off).')
  async whoAmI(@Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply): Promise<SessionAnswer> {
    const p = principalOf(req);
    void reply.header('cache-control', 'no-store');
    if (p.kind === 'user') {
      const token = sessionToken(req.headers.cookie);
      const rec = token ? await this.sessions.authenticate(token) : null;
      if (rec) {
        const projects = await this.members.projectsOf(rec.userId);
        return {
          kind: 'user',
          user: { id: rec.userId, username: rec.username },
          keyId: null,
          project: rec.project,
          role: rec.role,
          expiresAt: new Date(this.sessions.expiresAt(rec)).toISOString(),
          org: projects.find((x) => x.name === rec.project)?.org ?? ((await this.members.orgOfProject(rec.project)) || DEFAULT_ORG),
          hidePayloads: rec.hidePayloads === true,
          projects: projects.map(publicAccess),
          orgs: (await this.members.orgsOf(rec.userId)).map((o) => ({ name: o.name, orgRole: o.orgRole })),
        };
      }
    }
    const org = (await this.members.orgOfProject(p.project).catch(() => null)) ?? DEFAULT_ORG;
    return {
      kind: p.kind,
      user: null,
      keyId: p.keyId,
      project: p.project,
      role: p.role,
      expiresAt: null,
      org,
      hidePayloads: false,
      projects: p.role ? [{ name: p.project, org, role: p.role }] : [],
      orgs: [],
    };
  }

  /**
   * Switches the session's current project (API.md v1.3): the user's role
   * there is read from PostgreSQL; every later request of the session acts in
   * it with that role (on another api replica within SESSION_CACHE_MS).
   */
  @Post('project')
  @HttpCode(200)
  @Access('user')
  @Audited('auth.project', { body: 'project' })
  @ApiOperation({ operationId: 'switchProject', summary: "Switch the session's current project (a signed-in user only; 403 where the user has no role)" })
  @ApiAnswer(200, 'Session', 'The session as it is now.')
  @ApiErrors([403, 'The user has no role in that project, or the request is no session (code forbidden).'])
  async switchProject(@Body() body: SwitchProjectDto, @Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply): Promise<SessionAnswer> {
    const p = principalOf(req);
    const token = sessionToken(req.headers.cookie);
    if (!token || !p.userId) throw new ForbiddenError('only a dashboard session has a current project (a key acts in its own)');
    const projects = await this.members.projectsOf(p.userId);
    const to = projects.find((x) => x.name === body.project);
    if (!to) throw new ForbiddenError(`no role in project ${JSON.stringify(body.project)}`);
    const rec = await this.sessions.switchProject(token, { project: to.name, role: to.role, hidePayloads: to.hidePayloads });
    if (!rec) throw new UnauthorizedError('session expired or signed out: log in again (POST /auth/login)');
    void reply.header('cache-control', 'no-store');
    return {
      kind: 'user',
      user: { id: rec.userId, username: rec.username },
      keyId: null,
      project: rec.project,
      role: rec.role,
      expiresAt: new Date(this.sessions.expiresAt(rec)).toISOString(),
      org: to.org,
      hidePayloads: rec.hidePayloads === true,
      projects: projects.map(publicAccess),
      orgs: (await this.members.orgsOf(rec.userId)).map((o) => ({ name: o.name, orgRole: o.orgRole })),
    };
  }

  /** Sets an invited user's password with its one-time token (API.md v1.3). */
  @Post('accept-invite')
  @HttpCode(200)
  @Access('public')
  @Audited('auth.accept-invite')
  @ApiOperation({ operationId: 'acceptInvite', summary: 'Set the password of an invited user with its invitation token (single use, 7 days); then log in' })
  @ApiAnswer(200, 'InviteAccepted', 'The password is set.')
  @ApiErrors([400, 'The password breaks the rules (path password), or the token is unknown, used or expired — one answer for all three (path token).'])
  acceptInvite(@Body() body: AcceptInviteDto): Promise<{ user: { id: string; username: string }; org: string }> {
    return this.orgs.acceptInvite(body);
  }
}

function publicAccess(a: ProjectAccess): { name: string; org: string; role: Role } {
  return { name: a.name, org: a.org, role: a.role };
}
