import { DynamicModule, Global, Module } from '@nestjs/common';
import type { SluiceConfig } from './config';

/** Injection token of the validated SluiceConfig. */
export const SLUICE_CONFIG = Symbol('SLUICE_CONFIG');
/** Injection token of the pino logger. */
export const LOGGER = Symbol('LOGGER');

@Global()
@Module({})
export class ConfigModule {
  static forRoot(config: SluiceConfig, logger: unknown): DynamicModule {
    return {
      module: ConfigModule,
      providers: [
        { provide: SLUICE_CONFIG, useValue: config },
        { provide: LOGGER, useValue: logger },
      ],
      exports: [SLUICE_CONFIG, LOGGER],
    };
  }
}
