import { Global, Inject, Module, OnApplicationBootstrap, OnApplicationShutdown, Optional } from '@nestjs/common';
import { APP_GUARD, Reflector } from '@nestjs/core';
import type { DataSource } from 'typeorm';
import { AUDIT_DB } from '../postgres/postgres.module';
import type { SluiceConfig } from '../config/config';
import { LOGGER, SLUICE_CONFIG } from '../config/config.module';
import type { Logger } from '../logging/logger';
import type { RedisClient } from '../redis/connection';
import { REDIS } from '../redis/redis.module';
import { AuthGuard } from './auth.guard';
import { KeyRateLimiter } from './key-rate-limiter';
import { KeyStore } from './key-store';
import { RedisScripts } from '../redis/scripts';
import { SessionStore } from './session-store';
import { ProjectStore } from './project-store';

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
      inject: [REDIS, SLUICE_CONFIG, { token: AUDIT_DB, optional: true }],
      useFactory: (redis: RedisClient, c: SluiceConfig, db?: DataSource) => new KeyStore(redis, db ?? null, c.redisPrefix),
    },
    {
      provide: SessionStore,
      inject: [REDIS, SLUICE_CONFIG],
      useFactory: (redis: RedisClient, c: SluiceConfig) => new SessionStore(redis, c.redisPrefix, c.sessionIdleMs, c.sessionMaxMs),
    },
    {
      provide: ProjectStore,
      inject: [REDIS, SLUICE_CONFIG, { token: AUDIT_DB, optional: true }],
      useFactory: (redis: RedisClient, c: SluiceConfig, db?: DataSource) => new ProjectStore(redis, db ?? null, c.redisPrefix),
    },
    {
      provide: AuthGuard,
      inject: [Reflector, SLUICE_CONFIG, KeyStore, SessionStore, RedisScripts, ProjectStore],
      useFactory: (r: Reflector, c: SluiceConfig, keys: KeyStore, sessions: SessionStore, scripts: RedisScripts, projects: ProjectStore) =>
        new AuthGuard(r, c, keys, sessions, new KeyRateLimiter(scripts, c.redisPrefix, c.keyRateLimitPerSec, c.keyRateLimitBurst), projects),
    },
    { provide: APP_GUARD, useExisting: AuthGuard },
  ],
  exports: [KeyStore, SessionStore, AuthGuard, ProjectStore],
})
export class AuthModule implements OnApplicationBootstrap, OnApplicationShutdown {
  constructor(
    private readonly keys: KeyStore,
    private readonly projects: ProjectStore,
    @Inject(SLUICE_CONFIG) private readonly config: SluiceConfig,
    @Inject(LOGGER) private readonly log: Logger,
    @Optional() @Inject(AUDIT_DB) private readonly db?: DataSource,
  ) {}

  /**
   * Restores keys (and the projects registry) into Redis from PostgreSQL (when this process has it), creates
   * the bootstrap key, and warns when AUTH is on and no key can get in.
   */
  async onApplicationBootstrap(): Promise<void> {
    this.keys.start();
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
    await this.keys.stop();
  }
}
