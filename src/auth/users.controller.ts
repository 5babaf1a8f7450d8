import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Req } from '@nestjs/common';
import { Audited } from '../http/audited.decorator';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiAnswer, ApiErrors } from '../http/openapi/decorators';
import type { FastifyRequest } from 'fastify';
import { Access } from '../http/access.decorator';
import { CreateUserDto, UpdateUserDto } from './dto/users.dto';
import { principalOf } from './principal';
import type { UserView } from './user-store';
import { UsersService } from './users.service';

/** Dashboard users of your project (`admin`): no answer ever holds a password or its hash. */
@ApiTags('users')
@Controller('users')
export class UsersController {
  constructor(private readonly users: UsersService) {}

  @Post()
  @Access('admin')
  @Audited('user.create', { result: 'id' })
  @ApiOperation({ operationId: 'createUser', summary: 'Create a dashboard user with a role in your project' })
  @ApiAnswer(201, 'User', 'The new user (never its password).')
  @ApiErrors([409, 'A user with this username exists, whatever its case (code conflict).'])
  create(@Body() body: CreateUserDto, @Req() req: FastifyRequest): Promise<UserView> {
    return this.users.create(principalOf(req), body);
  }

  @Get()
  @Access('admin')
  @ApiOperation({ operationId: 'listUsers', summary: "Your project's users with their role" })
  @ApiAnswer(200, ['User'], 'Every user with a role in your project, oldest first.')
  list(@Req() req: FastifyRequest): Promise<UserView[]> {
    return this.users.list(principalOf(req));
  }

  @Patch(':id')
  @Access('admin')
  @Audited('user.update', { param: 'id' })
  @ApiOperation({ operationId: 'updateUser', summary: "Change a user's role, password or disabled flag; a role, password or disable change ends its sessions at once" })
  @ApiAnswer(200, 'User', 'The user as changed.')
  update(@Param('id') id: string, @Body() body: UpdateUserDto, @Req() req: FastifyRequest): Promise<UserView> {
    return this.users.update(principalOf(req), id, body);
  }

  @Delete(':id')
  @HttpCode(200)
  @Access('admin')
  @Audited('user.delete', { param: 'id' })
  @ApiOperation({ operationId: 'deleteUser', summary: 'Remove a user from your project (deleted when it has no other project); its sessions end at once' })
  @ApiAnswer(200, 'DeletedUser', 'The removed user.')
  remove(@Param('id') id: string, @Req() req: FastifyRequest): Promise<UserView & { deleted: true }> {
    return this.users.remove(principalOf(req), id);
  }
}
