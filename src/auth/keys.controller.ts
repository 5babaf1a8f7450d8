import { Body, Controller, Delete, Get, HttpCode, Param, Post, Req } from '@nestjs/common';
import { ApiOperation, ApiProperty, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsIn, IsISO8601, IsOptional, IsString, Length, Matches, ValidateNested } from 'class-validator';
import type { FastifyRequest } from 'fastify';
import { ROLES, type Role } from '../core/access';
import { SluiceError, ValidationError } from '../core/errors';
import { Access } from '../http/access.decorator';
import { Audited } from '../http/audited.decorator';
import { RATE_LIMIT_MAX } from './key-rate-limiter';
import { IntInRange } from '../http/validation';
import { KeyStore, type KeyRecord, type KeyView } from './key-store';
import { principalOf } from './principal';
import { ApiAnswer } from '../http/openapi/decorators';

/** Longest a key may live, ms (10 years). */
export const MAX_KEY_LIFETIME_MS = 10 * 365 * 86_400_000;

/** A key's own token bucket (`POST /keys` `rateLimit`). */
export class KeyRateLimitDto {
  @ApiProperty({ minimum: 1, maximum: RATE_LIMIT_MAX, description: 'requests per second (refill rate), across every api replica' })
  @IntInRange(1, RATE_LIMIT_MAX)
  perSec!: number;

  @ApiPropertyOptional({ minimum: 1, maximum: RATE_LIMIT_MAX, description: 'requests at once (bucket size); default perSec' })
  @IsOptional()
  @IntInRange(1, RATE_LIMIT_MAX)
  burst?: number;
}

/** `POST /keys` body. */
export class CreateKeyDto {
  @ApiProperty({ minLength: 1, maxLength: 128, example: 'billing-service' })
  @IsString()
  @Length(1, 128)
  @Matches(/^[^\p{Cc}\p{Cs}]+$/u, { message: 'must not contain control characters' })
  name!: string;

  @ApiProperty({ enum: ROLES })
  @IsIn(ROLES as unknown as string[])
  role!: Role;

  @ApiPropertyOptional({ example: '2027-12-01T00:00:00.000Z', description: 'ISO time, in the future, at most 10 years ahead; absent = never expires' })
  @IsOptional()
  @IsISO8601({ strict: true })
  expiresAt?: string;

  @ApiPropertyOptional({ type: KeyRateLimitDto, description: "this key's token bucket; absent = KEY_RATE_LIMIT_PER_SEC / KEY_RATE_LIMIT_BURST" })
  @IsOptional()
  @ValidateNested()
  @Type(() => KeyRateLimitDto)
  rateLimit?: KeyRateLimitDto;
}

class KeyIdParam {
  static check(id: string): string {
    if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(id)) throw new SluiceError('not_found', 'key not found');
    return id;
  }
}

/** API.md v1.1 keys: create (secret shown once), list (no secrets), revoke; `admin` of the project. */
@ApiTags('keys')
@Controller('keys')
export class KeysController {
  constructor(private readonly keys: KeyStore) {}

  @Post()
  @Access('admin')
  @Audited('key.create', { result: 'id' })
  @ApiOperation({ operationId: 'createKey', summary: 'Create an API key in your project; the secret is in this answer only' })
  @ApiAnswer(201, 'CreatedKey', 'The key with its secret (shown this once).')
  async create(@Body() body: CreateKeyDto, @Req() req: FastifyRequest): Promise<KeyRecord & { secret: string }> {
    const p = principalOf(req);
    let expiresAt: string | null = null;
    if (body.expiresAt !== undefined) {
      const ms = Date.parse(body.expiresAt);
      if (!Number.isFinite(ms) || ms <= Date.now() || ms > Date.now() + MAX_KEY_LIFETIME_MS) {
        throw new ValidationError('invalid request: expiresAt', [{ path: 'expiresAt', message: 'must be a time in the future, at most 10 years ahead' }]);
      }
      expiresAt = new Date(ms).toISOString();
    }
    const rateLimit = body.rateLimit ? { perSec: body.rateLimit.perSec, burst: body.rateLimit.burst ?? body.rateLimit.perSec } : null;
    return this.keys.create({ name: body.name, role: body.role, project: p.project, expiresAt, rateLimit });
  }

  @Get()
  @Access('admin')
  @ApiOperation({ operationId: 'listKeys', summary: "Your project's keys, without secrets" })
  @ApiAnswer(200, ['KeyView'], 'Every key of the project, without secrets.')
  list(@Req() req: FastifyRequest): Promise<KeyView[]> {
    const p = principalOf(req);
    // Root keys are root's: a project admin neither sees nor revokes them (API.md v1.2).
    return this.keys.list(p.project, { root: p.root });
  }

  @Delete(':id')
  @HttpCode(200)
  @Access('admin')
  @Audited('key.revoke', { param: 'id' })
  @ApiOperation({ operationId: 'revokeKey', summary: 'Revoke a key: refused from then on (within 1 s on every api replica)' })
  @ApiAnswer(200, 'RevokedKey', 'The revoked key.')
  async revoke(@Param('id') id: string, @Req() req: FastifyRequest): Promise<KeyRecord & { revoked: true }> {
    const p = principalOf(req);
    const rec = await this.keys.revoke(KeyIdParam.check(id), p.project, { root: p.root });
    if (!rec) throw new SluiceError('not_found', `key ${id} not found`);
    return { ...rec, revoked: true };
  }
}
