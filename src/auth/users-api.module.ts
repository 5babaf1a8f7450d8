import { Module } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { POSTGRES_DB, PostgresModule } from '../postgres/postgres.module';
import { LoginAttempts } from '../core/ports';
import { LoginController } from './login.controller';
import { LoginLimiter } from './login-limiter';
import { LoginService } from './login.service';
import { UserStore } from './user-store';
import { UsersController } from './users.controller';
import { UsersService } from './users.service';
import { OrgStore } from './org-store';
import { OrgsController } from './orgs.controller';
import { OrgsService } from './orgs.service';

/**
 * Dashboard users and sign-in (api role): `POST/GET/PATCH/DELETE /users`,
 * `/auth/login|logout|session|project|accept-invite` and the organizations' routes (`/orgs`). Users live in PostgreSQL, sessions and
 * the login limit in Redis (the session store is the global AuthModule's:
 * the guard reads it on every route).
 */
@Module({
  imports: [PostgresModule],
  controllers: [UsersController, LoginController, OrgsController],
  providers: [
    { provide: UserStore, inject: [POSTGRES_DB], useFactory: (db: DataSource) => new UserStore(db) },
    { provide: LoginLimiter, inject: [LoginAttempts], useFactory: (attempts: LoginAttempts) => new LoginLimiter(attempts) },
    { provide: OrgStore, inject: [POSTGRES_DB], useFactory: (db: DataSource) => new OrgStore(db) },
    UsersService,
    LoginService,
    OrgsService,
  ],
})
export class UsersApiModule {}
