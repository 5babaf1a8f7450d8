import { Module } from '@nestjs/common';
import { KeysController } from './keys.controller';

/** `POST/GET/DELETE /keys` (api role). */
@Module({ controllers: [KeysController] })
export class KeysApiModule {}
