import { DynamicModule, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { discoverHandlerClasses } from './handler-loader';
import { HandlerRegistry } from './handler-registry';

/**
 * Registers every @JobHandler class found under src/handlers (see
 * handler-loader) and the registry that maps job types to them.
 */
@Module({})
export class HandlersModule {
  static forRoot(opts: { diagnostics: boolean }): DynamicModule {
    const classes = discoverHandlerClasses(__dirname, opts.diagnostics);
    return {
      module: HandlersModule,
      global: true,
      imports: [DiscoveryModule],
      providers: [...classes, HandlerRegistry],
      exports: [HandlerRegistry],
    };
  }
}
