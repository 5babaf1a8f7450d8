import { Module } from '@nestjs/common';
import { MirrorService } from './mirror.service';

/** The `audit` role. */
@Module({ providers: [MirrorService], exports: [MirrorService] })
export class MirrorModule {}
