import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Patch, Post, Query, Req } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { POSTGRES_DB } from '../postgres/postgres.module';
import { PageQueryDto } from '../http/page-query.dto';
import { listOplog, type ApiOplogEntry } from '../oplog/oplog-queries';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { Access } from '../http/access.decorator';
import { Audited } from '../http/audited.decorator';
import { ApiAnswer, ApiErrors } from '../http/openapi/decorators';
import { CreateMemberDto, CreateOrgDto, UpdateMemberDto } from './dto/orgs.dto';
import type { MemberView } from './member-store';
import { OrgStore, type OrgRecord } from './org-store';
import { OrgsService, type CreatedMember } from './orgs.service';
import { principalOf } from './principal';

/**
 * API.md v1.3 "Organizations and members": organizations (root creates them)
 * and their members (owners and admins of the organization manage them; the
 * guard checks the membership of the `:org` the path names: a user who is no
 * member of it gets 404, a member who is not owner or admin 403).
 */
@ApiTags('organizations')
@Controller('orgs')
export class OrgsController {
  constructor(
    private readonly orgs: OrgStore,
    private readonly service: OrgsService,
    @Inject(POSTGRES_DB) private readonly db: DataSource,
  ) {}

  @Post()
  @HttpCode(201)
  @Access('root')
  @Audited('org.create', { result: 'name' })
  @ApiOperation({ operationId: 'createOrg', summary: 'Create an organization (root key)' })
  @ApiAnswer(201, 'Org', 'The new organization.')
  @ApiErrors([409, 'An organization with this name exists (code conflict).'])
  create(@Body() body: CreateOrgDto): Promise<OrgRecord> {
    return this.orgs.create(body.name);
  }

  @Get()
  @Access('root', 'user')
  @ApiOperation({ operationId: 'listOrgs', summary: 'Organizations: every one for a root key, a signed-in user its own (with its role)' })
  @ApiAnswer(200, ['Org'], '`default` first, then by name.')
  list(@Req() req: FastifyRequest): Promise<OrgRecord[]> {
    return this.service.list(principalOf(req));
  }

  @Get(':org/members')
  @Access('org-admin')
  @ApiOperation({ operationId: 'listMembers', summary: "The organization's members with their roles (owner, admin or root)" })
  @ApiAnswer(200, ['Member'], 'Every member, oldest first.')
  @ApiErrors([404, 'No such organization, or the caller is no member of it (code not_found).'])
  members(@Param('org') org: string, @Req() req: FastifyRequest): Promise<MemberView[]> {
    return this.service.listMembers(principalOf(req), org);
  }

  @Post(':org/members')
  @HttpCode(201)
  @Access('org-admin')
  @Audited('org.member.add', { paramBody: ['org', 'username'] })
  @ApiOperation({ operationId: 'addMember', summary: 'Add a member: an existing user joins; a new one gets an invitation token (shown once, 7 days, single use)' })
  @ApiAnswer(201, 'CreatedMember', 'The member; `inviteToken` and `inviteExpiresAt` when the user is new.')
  @ApiErrors([404, 'No such organization, or the caller is no member of it (code not_found).'], [409, 'The user is a member already (code conflict).'])
  addMember(@Param('org') org: string, @Body() body: CreateMemberDto, @Req() req: FastifyRequest): Promise<CreatedMember> {
    return this.service.addMember(principalOf(req), org, body);
  }

  @Patch(':org/members/:username')
  @Access('org-admin')
  @Audited('org.member.update', { params: ['org', 'username'] })
  @ApiOperation({ operationId: 'updateMember', summary: "Change a member's organization role, project roles (replaced) or hidePayloads; ends its sessions at once" })
  @ApiAnswer(200, 'Member', 'The member as changed.')
  @ApiErrors([404, 'No such organization or member (code not_found).'], [409, 'The last owner would be demoted (code conflict).'])
  updateMember(@Param('org') org: string, @Param('username') username: string, @Body() body: UpdateMemberDto, @Req() req: FastifyRequest): Promise<MemberView> {
    return this.service.updateMember(principalOf(req), org, username, body);
  }

  @Delete(':org/members/:username')
  @HttpCode(200)
  @Access('org-admin')
  @Audited('org.member.remove', { params: ['org', 'username'] })
  @ApiOperation({ operationId: 'removeMember', summary: 'Remove a member (and its roles in the organization’s projects); ends its sessions at once' })
  @ApiAnswer(200, 'RemovedMember', 'The member as it was.')
  @ApiErrors([404, 'No such organization or member (code not_found).'], [409, 'The last owner would be removed (code conflict).'])
  removeMember(@Param('org') org: string, @Param('username') username: string, @Req() req: FastifyRequest): Promise<MemberView & { removed: true }> {
    return this.service.removeMember(principalOf(req), org, username);
  }

  @Get(':org/audit-log')
  @Access('org-admin')
  @ApiOperation({ operationId: 'listOrgAuditLog', summary: "The organization's own changes (members added, changed, removed), newest first (owner, admin or root)" })
  @ApiAnswer(200, 'AuditLogPage', 'One page of the log, newest first.')
  @ApiErrors([404, 'No such organization, or the caller is no member of it (code not_found).'])
  async auditLog(@Param('org') org: string, @Query() q: PageQueryDto, @Req() req: FastifyRequest): Promise<{ items: ApiOplogEntry[]; nextCursor: string | null }> {
    await this.service.mustExist(principalOf(req), org);
    return listOplog(this.db, `org:${org}`, q.cursor, q.limit);
  }
}
