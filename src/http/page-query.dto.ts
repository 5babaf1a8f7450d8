import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsInt, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';
import { LIMIT_DEFAULT, LIMIT_MAX } from '../core/paging';
import { DecimalInt } from './validation';

/** Page size and cursor shared by the keyset-paginated lists. */
export class PageQueryDto {
  @ApiPropertyOptional({ description: 'the `nextCursor` of the previous page' })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  cursor?: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: LIMIT_MAX, default: LIMIT_DEFAULT })
  @IsOptional()
  @DecimalInt()
  @IsInt({ message: `must be an integer 1..${LIMIT_MAX}` })
  @Min(1, { message: `must be an integer 1..${LIMIT_MAX}` })
  @Max(LIMIT_MAX, { message: `must be an integer 1..${LIMIT_MAX}` })
  limit?: number;
}
