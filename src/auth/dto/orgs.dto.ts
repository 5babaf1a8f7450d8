import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsIn, IsObject, IsOptional, IsString, Length, Matches, MaxLength } from 'class-validator';
import { MEMBER_ROLES, ORG_ROLES, type OrgRole, type Role } from '../../core/access';
import { PROJECT_PATTERN } from '../../core/project-queue';
import { PASSWORD_MAX_BYTES, PASSWORD_MIN_CHARS, USERNAME_PATTERN } from '../../core/user-credentials';

/** Most projects one member's `projects` map may name. */
export const MEMBER_PROJECTS_MAX = 500;

const PROJECTS_DOC =
  `project name → role there (${MEMBER_ROLES.join(', ')}); only projects of this organization; at most ${MEMBER_PROJECTS_MAX}. ` +
  'An owner or admin is admin of every project of the organization whatever this says; an org viewer is viewer where it names none.';

/** `POST /orgs` body. */
export class CreateOrgDto {
  @ApiProperty({ pattern: PROJECT_PATTERN.source, example: 'acme', description: 'the queue-name rule' })
  @IsString()
  @Matches(PROJECT_PATTERN, { message: `must match ${PROJECT_PATTERN.source}` })
  name!: string;
}

/** `POST /orgs/:org/members` body. */
export class CreateMemberDto {
  @ApiProperty({ example: 'ana@example.com', pattern: USERNAME_PATTERN.source, description: 'an existing user joins; a new one is invited (the answer holds its `inviteToken`)' })
  @IsString()
  @Matches(USERNAME_PATTERN, { message: `must match ${USERNAME_PATTERN.source}` })
  username!: string;

  @ApiProperty({ enum: ORG_ROLES, description: 'owner and admin manage the members and are admin of every project; only an owner makes an owner' })
  @IsIn(ORG_ROLES as unknown as string[])
  orgRole!: OrgRole;

  @ApiPropertyOptional({ type: 'object', additionalProperties: { type: 'string', enum: [...MEMBER_ROLES] }, example: { acme: 'operator' }, description: PROJECTS_DOC })
  @IsOptional()
  @IsObject()
  projects?: Record<string, Role>;

  @ApiPropertyOptional({ description: 'true: payloads, results and log messages read as "[hidden]" everywhere this member reads (default false)' })
  @IsOptional()
  @IsBoolean()
  hidePayloads?: boolean;
}

/** `PATCH /orgs/:org/members/:username` body: at least one field; ends the member's sessions. */
export class UpdateMemberDto {
  @ApiPropertyOptional({ enum: ORG_ROLES })
  @IsOptional()
  @IsIn(ORG_ROLES as unknown as string[])
  orgRole?: OrgRole;

  @ApiPropertyOptional({ type: 'object', additionalProperties: { type: 'string', enum: [...MEMBER_ROLES] }, example: { acme: 'viewer' }, description: `replaces the member's project roles: ${PROJECTS_DOC}` })
  @IsOptional()
  @IsObject()
  projects?: Record<string, Role>;

  @ApiPropertyOptional()
  @IsOptional()
  @IsBoolean()
  hidePayloads?: boolean;
}

/** `POST /auth/accept-invite` body. */
export class AcceptInviteDto {
  @ApiProperty({ description: 'the `inviteToken` of `POST /orgs/:org/members` (`inv_…`)' })
  @IsString()
  @Length(1, 200)
  token!: string;

  @ApiProperty({ format: 'password', description: `at least ${PASSWORD_MIN_CHARS} characters, at most ${PASSWORD_MAX_BYTES} bytes (UTF-8)` })
  @IsString()
  @MaxLength(PASSWORD_MAX_BYTES)
  password!: string;
}

/** `POST /auth/project` body. */
export class SwitchProjectDto {
  @ApiProperty({ example: 'acme', description: 'a project the signed-in user has a role in (403 otherwise)' })
  @IsString()
  @Matches(PROJECT_PATTERN, { message: `must match ${PROJECT_PATTERN.source}` })
  project!: string;
}
