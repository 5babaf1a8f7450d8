import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, Matches } from 'class-validator';
import { UUID_RE } from '../../history/common';

/** `GET /dashboard/events` query. */
export class LiveQueryDto {
  @ApiPropertyOptional({ format: 'uuid', description: "one job's live history (its events, log lines and progress) instead of the overview" })
  @IsOptional()
  @IsString()
  @Matches(UUID_RE, { message: 'must be a job id (UUID)' })
  job?: string;
}
