import { Injectable } from '@nestjs/common';
import { ForbiddenError, SluiceError, ValidationError } from '../core/errors';
import { passwordProblem } from '../core/user-credentials';
import type { CreateUserDto, UpdateUserDto } from './dto/users.dto';
import { hashPassword } from './password-hasher';
import type { Principal } from './principal';
import { SessionStore } from './session-store';
import { UserStore, type UserView } from './user-store';

/** Unknown user in the caller's project (HTTP 404 `not_found`). */
export class UserNotFoundError extends SluiceError {
  constructor(id: string) {
    super('not_found', `user ${id.slice(0, 64)} not found`);
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * Dashboard users of the caller's project (`admin`): create, list, change,
 * remove. Passwords are checked (src/core/user-credentials.ts) and hashed
 * (argon2id) here; a role, password or disabled change and a removal end
 * the user's sessions at once (every project's: a user has one set).
 */
@Injectable()
export class UsersService {
  constructor(
    private readonly users: UserStore,
    private readonly sessions: SessionStore,
  ) {}

  /** @throws ValidationError (password rules), UsernameTakenError (409). */
  async create(p: Principal, body: CreateUserDto): Promise<UserView> {
    checkPassword(body.password);
    return this.users.create({ username: body.username, passwordHash: await hashPassword(body.password), project: p.project, role: body.role });
  }

  list(p: Principal): Promise<UserView[]> {
    return this.users.list(p.project);
  }

  /**
   * @throws UserNotFoundError, ValidationError (no field, password rules),
   *   ForbiddenError when a non-root admin changes the password or the
   *   disabled flag of a user who also belongs to another project.
   */
  async update(p: Principal, id: string, body: UpdateUserDto): Promise<UserView> {
    if (!UUID.test(id)) throw new UserNotFoundError(id);
    if (body.role === undefined && body.password === undefined && body.disabled === undefined) {
      throw new ValidationError('invalid request: nothing to change', [{ path: '', message: 'give at least one of role, password, disabled' }]);
    }
    if (body.password !== undefined) checkPassword(body.password);
    const before = await this.users.get(id, p.project);
    if (!before) throw new UserNotFoundError(id);
    if ((body.password !== undefined || body.disabled !== undefined) && !p.root && (await this.users.inOtherProjects(id, p.project))) {
      throw new ForbiddenError('this user belongs to other projects too: only a root key may change its password or disable it');
    }
    const passwordHash = body.password !== undefined ? await hashPassword(body.password) : undefined;
    const after = await this.users.update(id, p.project, { role: body.role, passwordHash, disabled: body.disabled });
    if (!after) throw new UserNotFoundError(id);
    // After the change is committed: a login racing with it re-reads the user once its session is listed (LoginService).
    if (after.role !== before.role || passwordHash !== undefined || body.disabled === true) await this.sessions.revokeUser(id);
    return after;
  }

  /** @throws UserNotFoundError */
  async remove(p: Principal, id: string): Promise<UserView & { deleted: true }> {
    if (!UUID.test(id)) throw new UserNotFoundError(id);
    const u = await this.users.remove(id, p.project);
    if (!u) throw new UserNotFoundError(id);
    await this.sessions.revokeUser(id);
    return { ...u, deleted: true };
  }
}

/** @throws ValidationError naming `password` (the message never holds the password). */
function checkPassword(password: string): void {
  const problem = passwordProblem(password);
  if (problem) throw new ValidationError('invalid request: password', [{ path: 'password', message: problem }]);
}
