import { Body, Controller, Get, HttpCode, Post } from '@nestjs/common';
import { ApiOperation, ApiProperty, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { IsOptional, IsString, Matches } from 'class-validator';
import { PROJECT_PATTERN } from '../core/project-queue';
import { ApiAnswer, ApiErrors } from '../http/openapi/decorators';
import { Audited } from '../http/audited.decorator';
import { Access } from '../http/access.decorator';
import { ProjectStore, type ProjectRecord } from './project-store';

/** `POST /projects` body. */
export class CreateProjectDto {
  @ApiProperty({ pattern: PROJECT_PATTERN.source, example: 'acme', description: 'the queue-name rule' })
  @IsString()
  @Matches(PROJECT_PATTERN, { message: `must match ${PROJECT_PATTERN.source}` })
  name!: string;

  @ApiPropertyOptional({ pattern: PROJECT_PATTERN.source, example: 'default', description: 'the organization that holds it (default `default`; 404 when unknown)' })
  @IsOptional()
  @IsString()
  @Matches(PROJECT_PATTERN, { message: `must match ${PROJECT_PATTERN.source}` })
  org?: string;
}

/**
 * API.md v1.1 projects (tenants): create (root keys, and API.md v1.3 an owner or admin
 * of the organization named in the body) and list (root keys). A root
 * key then acts in a project by sending `X-Sluice-Project: <name>`; keys and
 * users created there belong to it.
 */
@ApiTags('projects')
@Controller('projects')
export class ProjectsController {
  constructor(private readonly projects: ProjectStore) {}

  @Post()
  @HttpCode(201)
  @Access('root', 'org-admin')
  @Audited('project.create', { result: 'name' })
  @ApiOperation({ operationId: 'createProject', summary: "Create a project in an organization (root key, or an owner or admin of the body's `org`)" })
  @ApiAnswer(201, 'Project', 'The new project.')
  @ApiErrors([404, 'No organization of that name, or the signed-in user is no member of it (code not_found).'], [409, 'A project with this name exists (code conflict).'])
  create(@Body() body: CreateProjectDto): Promise<ProjectRecord> {
    return this.projects.create(body.name, body.org);
  }

  @Get()
  @Access('root')
  @ApiOperation({ operationId: 'listProjects', summary: 'Every project, `default` first (root key)' })
  @ApiAnswer(200, ['Project'], 'Every project: default first, then by name.')
  list(): Promise<ProjectRecord[]> {
    return this.projects.list();
  }
}
