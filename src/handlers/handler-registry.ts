import { Injectable, OnModuleInit } from '@nestjs/common';
import { DiscoveryService, Reflector } from '@nestjs/core';
import { HandlerMap } from '../core/handler';
import { JOB_HANDLER_METADATA } from './job-handler.decorator';
import type { JobHandlerClass } from './handler-class';

/**
 * Finds every provider decorated with @JobHandler at boot and registers its
 * `handle` method under its job type.
 * @throws Error at boot on a duplicate type or a class without handle().
 */
@Injectable()
export class HandlerRegistry implements OnModuleInit {
  readonly map = new HandlerMap();

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly reflector: Reflector,
  ) {}

  onModuleInit(): void {
    for (const wrapper of this.discovery.getProviders()) {
      const { instance, metatype } = wrapper;
      if (!instance || !metatype) continue;
      const type = this.reflector.get<string | undefined>(JOB_HANDLER_METADATA, metatype);
      if (!type) continue;
      const h = instance as JobHandlerClass;
      if (typeof h.handle !== 'function') throw new Error(`${metatype.name} is a @JobHandler('${type}') without a handle() method`);
      this.map.register(type, h.handle.bind(h), metatype.name);
    }
  }

  types(): string[] {
    return this.map.types();
  }
}
