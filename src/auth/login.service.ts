import { Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import type { Role } from '../core/access';
import { UnauthorizedError, ValidationError } from '../core/errors';
import { addressBucket, PASSWORD_MAX_BYTES, usernameKey } from '../core/user-credentials';
import type { LoginDto } from './dto/users.dto';
import { LoginLimiter } from './login-limiter';
import { dummyHash, hashPassword, needsRehash, verifyPassword } from './password-hasher';
import { DEFAULT_PROJECT } from './principal';
import { sessionToken } from './session-cookie';
import { SessionStore } from './session-store';
import { UserStore } from './user-store';
import { MemberStore, type ProjectAccess } from './member-store';

/** `POST /auth/login` answer (the token goes in the cookie only). */
export interface LoginAnswer {
  user: { id: string; username: string };
  project: string;
  role: Role;
  /** When the session ends unless activity refreshes it (ISO time). */
  expiresAt: string;
}

/** One message for every wrong credential: an unknown user and a wrong password cannot be told apart. */
export const BAD_LOGIN = 'invalid username or password';

/**
 * Dashboard login: the limit (src/auth/login-limiter.ts), the password check
 * (argon2id; an unknown user is checked against a dummy hash so it costs the
 * same), and a new session (rotation: the cookie the request came with, if
 * any, is ended first).
 */
@Injectable()
export class LoginService {
  constructor(
    private readonly users: UserStore,
    private readonly sessions: SessionStore,
    private readonly limiter: LoginLimiter,
    private readonly members: MemberStore,
  ) {}

  /**
   * @returns the answer and the new session's token (for the cookie).
   * @throws ValidationError (a password over the byte bound: never hashed),
   *   LoginRateLimitedError (429), UnauthorizedError ({@link BAD_LOGIN}).
   */
  async login(body: LoginDto, req: FastifyRequest): Promise<{ answer: LoginAnswer; token: string }> {
    if (Buffer.byteLength(body.password, 'utf8') > PASSWORD_MAX_BYTES) {
      throw new ValidationError('invalid request: password', [{ path: 'password', message: `must be at most ${PASSWORD_MAX_BYTES} bytes (UTF-8)` }]);
    }
    const attempt = await this.limiter.begin(usernameKey(body.username), addressBucket(req.ip));
    const user = await this.users.findForLogin(body.username);
    // An invited user without a password yet is checked like an unknown one (same cost, same answer).
    const ok = await verifyPassword(user?.passwordHash ?? (await dummyHash()), body.password);
    const access = user && user.passwordHash ? pickProject(await this.members.projectsOf(user.id), body.project) : null;
    if (!user || !user.passwordHash || !ok || user.disabled || !access) throw new UnauthorizedError(BAD_LOGIN);
    const { name: project, role, hidePayloads } = access;
    await attempt.succeeded();

    const old = sessionToken(req.headers.cookie);
    if (old) await this.sessions.destroy(old);
    const s = await this.sessions.create({ userId: user.id, username: user.username, project, role, hidePayloads });
    // A disable or role change committed while we checked ended the sessions it listed; ours was
    // listed only now: read the user again, so either that revoke or this check ends it.
    const again = await this.users.findForLogin(user.username);
    const still = again ? (await this.members.projectsOf(again.id)).find((a) => a.name === project) : undefined;
    if (!again || again.id !== user.id || again.disabled || still?.role !== role || still.hidePayloads !== hidePayloads || again.passwordHash !== user.passwordHash) {
      await this.sessions.destroyHash(s.hash);
      throw new UnauthorizedError(BAD_LOGIN);
    }
    const oldHash = user.passwordHash;
    if (needsRehash(oldHash)) {
      void hashPassword(body.password)
        .then((h) => this.users.rehash(user.id, oldHash, h))
        .catch(() => undefined);
    }
    return {
      token: s.token,
      answer: { user: { id: user.id, username: user.username }, project, role, expiresAt: new Date(this.sessions.expiresAt(s.record)).toISOString() },
    };
  }
}

/**
 * The project a login signs in to (API.md v1.3: "the first the user may see"): the one asked
 * for, else `default` when the user has it, else its first by name; null when it has no role there.
 * @param access the user's projects as {@link MemberStore.projectsOf} lists them (`default` first, then by name).
 */
function pickProject(access: ProjectAccess[], asked: string | undefined): ProjectAccess | null {
  if (asked !== undefined) return access.find((a) => a.name === asked) ?? null;
  return access.find((a) => a.name === DEFAULT_PROJECT) ?? access[0] ?? null;
}
