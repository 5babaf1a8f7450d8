import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, MaxLength } from 'class-validator';
import { LIMIT_DEFAULT, LIMIT_MAX } from '../core/paging';
import { QueryIntInRange } from './validation';

/** Page size and cursor shared by the keyset-paginated lists. */
export class PageQueryDto {
  @ApiPropertyOptional({ description: 'the `nextCursor` of the previous page' })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  cursor?: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: LIMIT_MAX, default: LIMIT_DEFAULT })
  @IsOptional()
  @QueryIntInRange(1, LIMIT_MAX)
  limit?: number;
}
