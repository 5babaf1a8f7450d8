import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Req } from '@nestjs/common';
import { Audited } from '../oplog/audited.decorator';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { Access } from './access.decorator';
import { CreateUserDto, UpdateUserDto } from './dto/users.dto';
import { principalOf } from './principal';
import type { UserView } from './user-store';
import { UsersService } from './users.service';

/** Dashboard users of your project (`admin`): no answer ever holds a password or its hash. */
@ApiTags('users')
@ApiBearerAuth()
@Controller('users')
export class UsersController {
  constructor(private readonly users: UsersService) {}

  @Post()
  @Access('admin')
  @Audited('user.create', { result: 'id' })
  @ApiOperation({ summary: 'Create a dashboard user with a role in your project' })
  create(@Body() body: CreateUserDto, @Req() req: FastifyRequest): Promise<UserView> {
    return this.users.create(principalOf(req), body);
  }

  @Get()
  @Access('admin')
  @ApiOperation({ summary: "Your project's users with their role" })
  list(@Req() req: FastifyRequest): Promise<UserView[]> {
    return this.users.list(principalOf(req));
  }

  @Patch(':id')
  @Access('admin')
  @Audited('user.update', { param: 'id' })
  @ApiOperation({ summary: "Change a user's role, password or disabled flag; a role, password or disable change ends its sessions at once" })
  update(@Param('id') id: string, @Body() body: UpdateUserDto, @Req() req: FastifyRequest): Promise<UserView> {
    return this.users.update(principalOf(req), id, body);
  }

  @Delete(':id')
  @HttpCode(200)
  @Access('admin')
  @Audited('user.delete', { param: 'id' })
  @ApiOperation({ summary: 'Remove a user from your project (deleted when it has no other project); its sessions end at once' })
  remove(@Param('id') id: string, @Req() req: FastifyRequest): Promise<UserView & { deleted: true }> {
    return this.users.remove(principalOf(req), id);
  }
}
