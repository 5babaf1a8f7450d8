import { Body, Controller, Get, HttpCode, Inject, Post, Req, Res } from '@nestjs/common';
import { Audited } from '../http/audited.decorator';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ROLES, type Role } from '../core/access';
import type { SluiceConfig } from '../config/config';
import { SLUICE_CONFIG } from '../config/config.module';
import { Access } from '../http/access.decorator';
import { LoginDto } from './dto/users.dto';
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
}

/** Dashboard sign-in (the console of the operator issue uses these). */
@ApiTags('auth')
@Controller('auth')
export class LoginController {
  constructor(
    private readonly login: LoginService,
    private readonly sessions: SessionStore,
    @Inject(SLUICE_CONFIG) private readonly config: SluiceConfig,
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
  @ApiOperation({ operationId: 'getSession', summary: 'Who this request acts as (the console asks on load); 401 without a session or key' })
  @ApiAnswer(200, 'Session', 'Who the request acts as: a signed-in user, an API key, or anonymous (AUTH off).')
  async whoAmI(@Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply): Promise<SessionAnswer> {
    const p = principalOf(req);
    void reply.header('cache-control', 'no-store');
    if (p.kind === 'user') {
      const token = sessionToken(req.headers.cookie);
      const rec = token ? await this.sessions.authenticate(token) : null;
      if (rec) {
        return { kind: 'user', user: { id: rec.userId, username: rec.username }, keyId: null, project: rec.project, role: rec.role, expiresAt: new Date(this.sessions.expiresAt(rec)).toISOString() };
      }
    }
    return { kind: p.kind, user: null, keyId: p.keyId, project: p.project, role: p.role, expiresAt: null };
  }
}
