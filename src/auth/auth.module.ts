import { Global, Inject, Module, OnApplicationBootstrap, OnApplicationShutdown, Optional } from '@nestjs/common';
import { APP_GUARD, APP_INTERCEPTOR, Reflector } from '@nestjs/core';
import type { DataSource } from 'typeorm';
import { POSTGRES_DB } from '../postgres/postgres.module';
import type { SluiceConfig } from '../config/config';
import { LOGGER, SLUICE_CONFIG } from '../config/config.module';
import { ApiKeyStore, ProjectRegistry, RestoreStore, SessionRecords, TokenBuckets } from '../core/ports';
import { RestoreState } from '../restore/restore-state';
import type { Logger } from '../logging/logger';
import { AuthGuard } from './auth.guard';
import { KeyRateLimiter } from './key-rate-limiter';
import { KeyStore } from './key-store';
import { SessionStore } from './session-store';
import { ProjectStore } from './project-store';
import { MemberStore } from './member-store';
import { HidePayloadsInterceptor } from './hide-payloads.interceptor';

/**
 * Credentials for every HTTP route of the process: the key store, the
 * dashboard's session store and the one global guard. The key routes themselves are in {@link KeysApiModule}
 * (api role).
 */
@Global()
@Module({
  providers: [
    {
      provide: KeyStore,
      inject: [ApiKeyStore, { token: POSTGRES_DB, optional: true }],
      useFactory: (store: ApiKeyStore, db?: DataSource) => new KeyStore(store, db ?? null),
    },
    {
      provide: SessionStore,
      inject: [SessionRecords, SLUICE_CONFIG],
      useFactory: (records: SessionRecords, c: SluiceConfig) => new SessionStore(records, c.sessionIdleMs, c.sessionMaxMs),
    },
    {
      provide: ProjectStore,
      inject: [ProjectRegistry, { token: POSTGRES_DB, optional: true }],
      useFactory: (registry: ProjectRegistry, db?: DataSource) => new ProjectStore(registry, db ?? null),
    },
    { provide: RestoreState, inject: [RestoreStore], useFactory: (store: RestoreStore) => new RestoreState(store) },
    // Organizations' members (PostgreSQL only): the guard asks it on the `org-admin` routes.
    { provide: MemberStore, inject: [{ token: POSTGRES_DB, optional: true }], useFactory: (db?: DataSource) => (db ? new MemberStore(db) : null) },
    {
      provide: AuthGuard,
      inject: [Reflector, SLUICE_CONFIG, KeyStore, SessionStore, TokenBuckets, ProjectStore, RestoreState, MemberStore],
      useFactory: (r: Reflector, c: SluiceConfig, keys: KeyStore, sessions: SessionStore, buckets: TokenBuckets, projects: ProjectStore, restore: RestoreState, members: MemberStore | null) =>
        new AuthGuard(r, c, keys, sessions, new KeyRateLimiter(buckets, c.keyRateLimitPerSec, c.keyRateLimitBurst), projects, restore, members),
    },
    { provide: APP_GUARD, useExisting: AuthGuard },
    // hidePayloads (API.md v1.3): every answer of a member who hides payloads, in one place.
    { provide: APP_INTERCEPTOR, useClass: HidePayloadsInterceptor },
  ],
  exports: [KeyStore, SessionStore, AuthGuard, ProjectStore, RestoreState, MemberStore],
})
export class AuthModule implements OnApplicationBootstrap, OnApplicationShutdown {
  constructor(
    private readonly keys: KeyStore,
    private readonly projects: ProjectStore,
    private readonly restoreState: RestoreState,
    @Inject(SLUICE_CONFIG) private readonly config: SluiceConfig,
    @Inject(LOGGER) private readonly log: Logger,
    @Optional() @Inject(POSTGRES_DB) private readonly db?: DataSource,
  ) {}

  /**
   * Restores keys (and the projects registry) into Redis from PostgreSQL (when this process has it), creates
   * the bootstrap key, and warns when AUTH is on and no key can get in.
   */
  async onApplicationBootstrap(): Promise<void> {
    this.keys.start();
    // Whether Redis is being rebuilt, read in the background (the guard answers 503, not 401, meanwhile).
    this.restoreState.start();
    if (this.db) {
      const r = await this.keys.reconcile().catch((e: Error) => {
        this.log.warn({ err: e.message }, 'api keys: cannot reconcile Redis with PostgreSQL now');
        return null;
      });
      if (r && (r.restored || r.removed)) this.log.warn(r, 'api keys: Redis restored from PostgreSQL');
      await this.projects.reconcile().catch((e: Error) => this.log.warn({ err: e.message }, 'projects: cannot reconcile Redis with PostgreSQL now'));
    }
    if (this.config.bootstrapAdminKey) {
      const outcome = await this.keys.ensureBootstrap(this.config.bootstrapAdminKey);
      if (outcome === 'revoked') this.log.warn({}, 'SLUICE_BOOTSTRAP_ADMIN_KEY names a key that was revoked: it stays revoked');
      else this.log.info({ outcome }, 'bootstrap admin key ready');
    }
    if (this.config.auth) {
      const any = (await this.keys.list(null)).length > 0;
      this.log.info({ auth: 'on' }, 'AUTH is on: every API request needs Authorization: Bearer <key>');
      if (!any) this.log.warn({}, 'AUTH is on and no API key exists: set SLUICE_BOOTSTRAP_ADMIN_KEY or run `npm run keys -- create --role admin`');
    } else {
      this.log.info({ auth: 'off', host: this.config.host }, 'AUTH is off (loopback HOST): every request acts as admin of the default project');
    }
  }

  async onApplicationShutdown(): Promise<void> {
    this.restoreState.stop();
    await this.keys.stop();
  }
}
