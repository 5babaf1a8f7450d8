import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsIn, IsOptional, IsString, Length, Matches, MaxLength } from 'class-validator';
import { ROLES, type Role } from '../../core/access';
import { PASSWORD_MAX_BYTES, PASSWORD_MIN_CHARS, USERNAME_PATTERN } from '../../core/user-credentials';

const PASSWORD_DOC = `at least ${PASSWORD_MIN_CHARS} characters, at most ${PASSWORD_MAX_BYTES} bytes (UTF-8); no other rule (NIST SP 800-63B)`;

/** `POST /users` body. The password's length rules are checked by the service (bytes, code points). */
export class CreateUserDto {
  @ApiProperty({ example: 'ana@example.com', pattern: USERNAME_PATTERN.source, description: 'unique whatever its case' })
  @IsString()
  @Matches(USERNAME_PATTERN, { message: `must match ${USERNAME_PATTERN.source}` })
  username!: string;

  @ApiProperty({ format: 'password', description: PASSWORD_DOC })
  @IsString()
  @MaxLength(PASSWORD_MAX_BYTES)
  password!: string;

  @ApiProperty({ enum: ROLES, description: 'role in your project' })
  @IsIn(ROLES as unknown as string[])
  role!: Role;
}

/** `PATCH /users/:id` body: at least one field. */
export class UpdateUserDto {
  @ApiPropertyOptional({ enum: ROLES, description: 'new role in your project (ends the user\'s sessions)' })
  @IsOptional()
  @IsIn(ROLES as unknown as string[])
  role?: Role;

  @ApiPropertyOptional({ format: 'password', description: `new password (ends the user's sessions): ${PASSWORD_DOC}` })
  @IsOptional()
  @IsString()
  @MaxLength(PASSWORD_MAX_BYTES)
  password?: string;

  @ApiPropertyOptional({ description: 'true: the user cannot log in and its sessions end; false: enabled again' })
  @IsOptional()
  @IsBoolean()
  disabled?: boolean;
}

/** `POST /auth/login` body. */
export class LoginDto {
  @ApiProperty({ example: 'ana@example.com' })
  @IsString()
  @Length(1, 128)
  username!: string;

  @ApiProperty({ format: 'password' })
  @IsString()
  @Length(1, PASSWORD_MAX_BYTES)
  password!: string;

  @ApiPropertyOptional({ example: 'default', description: "the project to sign in to; default: `default` if the user has a role there, else the user's first project" })
  @IsOptional()
  @Matches(/^[a-z0-9][a-z0-9_-]{0,63}$/, { message: 'must be a project name' })
  project?: string;
}
