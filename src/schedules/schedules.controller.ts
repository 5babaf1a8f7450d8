import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query, Req } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { principalOf } from '../auth/principal';
import { Access } from '../http/access.decorator';
import { Audited } from '../http/audited.decorator';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Json } from '../core/job';
import { ApiJob, toApiJob } from '../http/api-job';
import { ApiAnswer, ApiErrors } from '../http/openapi/decorators';
import { ApiSchedule, toApiSchedule } from './api-schedule';
import { CreateScheduleDto, PreviewQueryDto, UpdateScheduleDto } from './dto/schedule.dto';
import type { ScheduleInput } from './schedule-definition';
import { SchedulesService } from './schedules.service';

/** API.md "Schedules (cron)": the principal's project's schedules only (another project's id → 404). */
@ApiTags('schedules')
@Controller('schedules')
export class SchedulesController {
  constructor(private readonly schedules: SchedulesService) {}

  @Post()
  @Access('operator')
  @Audited('schedule.create', { result: 'id' })
  @HttpCode(201)
  @ApiOperation({ operationId: 'createSchedule', summary: 'Create a cron schedule' })
  @ApiAnswer(201, 'Schedule', 'The new schedule with its nextRunAt.')
  @ApiErrors([409, 'A schedule with this name exists (code conflict).'])
  async create(@Body() body: CreateScheduleDto, @Req() req: FastifyRequest): Promise<ApiSchedule> {
    return toApiSchedule(await this.schedules.create(toInput(body) as ScheduleInput, principalOf(req).project));
  }

  @Get()
  @Access('viewer')
  @ApiOperation({ operationId: 'listSchedules', summary: 'All schedules, oldest first' })
  @ApiAnswer(200, ['Schedule'], 'Every schedule, oldest first.')
  async list(@Req() req: FastifyRequest): Promise<ApiSchedule[]> {
    return (await this.schedules.list(principalOf(req).project)).map(toApiSchedule);
  }

  /** Declared before `:id`, so "preview" is not taken for an id. */
  @Get('preview')
  @Access('viewer')
  @ApiOperation({ operationId: 'previewSchedule', summary: 'The next runs of a cron expression in a time zone' })
  @ApiAnswer(200, 'SchedulePreview', 'The next `count` run times.')
  preview(@Query() q: PreviewQueryDto): { runs: string[] } {
    const from = q.from === undefined ? undefined : Date.parse(q.from);
    return { runs: this.schedules.preview(q.cron, q.timezone ?? 'UTC', from, q.count ?? 5).map((t) => new Date(t).toISOString()) };
  }

  @Get(':id')
  @Access('viewer')
  @ApiOperation({ operationId: 'getSchedule', summary: 'A schedule by id' })
  @ApiAnswer(200, 'Schedule', 'The schedule.')
  async get(@Param('id') id: string, @Req() req: FastifyRequest): Promise<ApiSchedule> {
    return toApiSchedule(await this.schedules.get(id, principalOf(req).project));
  }

  @Patch(':id')
  @Access('operator')
  @Audited('schedule.update', { param: 'id' })
  @ApiOperation({ operationId: 'updateSchedule', summary: 'Change a schedule (omitted fields are kept)' })
  @ApiAnswer(200, 'Schedule', 'The schedule as changed.')
  @ApiErrors([409, 'A schedule with this name exists (code conflict).'])
  async update(@Param('id') id: string, @Body() body: UpdateScheduleDto, @Req() req: FastifyRequest): Promise<ApiSchedule> {
    return toApiSchedule(await this.schedules.update(id, toInput(body), principalOf(req).project));
  }

  @Post(':id/run')
  @Access('operator')
  @Audited('schedule.run', { param: 'id' })
  @HttpCode(201)
  @ApiOperation({
    operationId: 'runSchedule',
    summary: 'Run a schedule now',
    description:
      'Enqueues the schedule\'s job at once (also for a disabled schedule), with no idempotency key: a manual run is no slot, so nextRunAt, lastSlotAt and lastRunAt do not move. The operator audit log records it (schedule.run).',
  })
  @ApiAnswer(201, 'Job', 'The enqueued job.')
  async run(@Param('id') id: string, @Req() req: FastifyRequest): Promise<ApiJob> {
    return toApiJob(await this.schedules.run(id, principalOf(req).project));
  }

  @Delete(':id')
  @Access('operator')
  @Audited('schedule.delete', { param: 'id' })
  @ApiOperation({ operationId: 'deleteSchedule', summary: 'Delete a schedule; answers the deleted schedule' })
  @ApiAnswer(200, 'Schedule', 'The deleted schedule.')
  async remove(@Param('id') id: string, @Req() req: FastifyRequest): Promise<ApiSchedule> {
    return toApiSchedule(await this.schedules.remove(id, principalOf(req).project));
  }
}

/** DTO → service input: only the fields the client sent (class instances carry undefined keys). */
function toInput(b: CreateScheduleDto | UpdateScheduleDto): Partial<ScheduleInput> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(b)) if (v !== undefined) out[k] = v;
  if (b.backoff) out.backoff = Object.fromEntries(Object.entries(b.backoff).filter(([, v]) => v !== undefined));
  if (b.payload) out.payload = b.payload as Record<string, Json>;
  return out as Partial<ScheduleInput>;
}
