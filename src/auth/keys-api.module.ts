import { Module } from '@nestjs/common';
import { KeysController } from './keys.controller';
import { ProjectsController } from './projects.controller';

/** `POST/GET/DELETE /keys` and `POST/GET /projects` (api role). */
@Module({ controllers: [KeysController, ProjectsController] })
export class KeysApiModule {}
